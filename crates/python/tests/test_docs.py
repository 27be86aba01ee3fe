"""Every public item has a docstring, and the examples in them run."""

import doctest

import pytest

import retile
import retile._calc
import retile.register

MODULES = [retile, retile._retile, retile._calc, retile.register]


def examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    seen = {}
    for module in MODULES:
        globs = {**vars(module), "retile": retile}
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or isinstance(obj, type(retile)):
                continue
            for test in finder.find(obj, f"{module.__name__}.{name}", globs=globs):
                if test.examples:
                    seen.setdefault(test.name, test)
    return list(seen.values())


EXAMPLES = examples()


def test_every_public_item_is_documented():
    missing = [n for n in retile.__all__ if not (getattr(retile, n).__doc__ or "").strip()]
    missing += [f"Layout.{n}" for n in ["parse", "shape", "stride", "size", "cosize", "rank", "depth", "mode", "flatten", "table"]
                if not (getattr(retile.Layout, n).__doc__ or "").strip()]
    missing += [f"Stream.{n}" for n in ["append", "finish", "summary", "bytes_taken", "dtype", "zarr_dtype", "finished"]
                if not (getattr(retile.Stream, n).__doc__ or "").strip()]
    assert not missing, missing
    assert len(EXAMPLES) >= 40, len(EXAMPLES)


@pytest.mark.parametrize("test", EXAMPLES, ids=[t.name for t in EXAMPLES])
def test_docstring_examples_run(test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=lambda s: None)
    assert result.failed == 0, f"{test.name}: run `python -m doctest` on it to see the difference"
