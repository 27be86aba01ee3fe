//! `--memory`: the epoch buffers a memory budget buys, stated by the plan,
//! refused with the figure when it holds fewer than two, and a stream that
//! holds more of them writing the same store.

use std::process::Command;

fn retile(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_plan_states_the_epoch_buffers_a_budget_buys() {
    // epochs of one 4 x 64 x 64 u16 tile: 32 KiB and a cache line (a tile
    // of whole pages starts a line later than the last)
    let base = [
        "plan", "stream", "--shape", "0,64,64", "--tile", "4,64,64", "--json",
    ];
    for (memory, buffers) in [("65664", 2), ("100K", 3), ("1M", 31), ("1G", 64)] {
        let (ok, out, err) = retile(&[&base[..], &["--memory", memory]].concat());
        assert!(ok, "{err}");
        let plan: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(plan["epoch_buffers"], buffers, "{memory}: {out}");
        assert_eq!(
            plan["memory_bytes"],
            buffers * ((32 << 10) + 64),
            "{memory}: {out}"
        );
    }
    let (ok, out, _) = retile(&base);
    assert!(ok);
    assert!(out.contains("\"epoch_buffers\":2"), "{out}");
}

#[test]
fn a_budget_below_two_epochs_or_not_a_size_is_refused_with_the_figure() {
    let base = [
        "stream", "--shape", "0,64,64", "--tile", "4,64,64", "--planes", "8",
    ];
    let (ok, _, err) = retile(&[&base[..], &["--memory", "40K"]].concat());
    assert!(!ok);
    assert!(err.contains("give at least 65664 bytes"), "{err}");
    for bad in ["2Q", "x", "-1", "99999999999999T"] {
        let arg = format!("--memory={bad}");
        let (ok, _, err) = retile(&[&base[..], &[arg.as_str()]].concat());
        assert!(!ok, "{bad}");
        assert!(
            err.contains("size") || err.contains("64 bits"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn a_stream_holding_more_epochs_writes_the_same_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut stores = Vec::new();
    // epochs of 8 tiles of 4 x 16 x 32 u16 (4 KiB and a line): 33,280 bytes
    for memory in ["66560", "1M"] {
        let out = dir.path().join(format!("m{memory}.zarr"));
        let (ok, _, err) = retile(&[
            "stream",
            "--shape",
            "0,64,64",
            "--planes",
            "37",
            "--tile",
            "4,16,32",
            "--shard",
            "2,2,1",
            "--codec",
            "zstd:1",
            "--memory",
            memory,
            "--output",
            out.to_str().unwrap(),
        ]);
        assert!(ok, "{err}");
        let array = zarrs::array::Array::open(
            std::sync::Arc::new(zarrs::filesystem::FilesystemStore::new(&out).unwrap()),
            "/",
        )
        .unwrap();
        assert_eq!(array.shape(), &[37, 64, 64]);
        let subset = array.subset_all();
        stores.push(array.retrieve_array_subset::<Vec<u16>>(&subset).unwrap());
    }
    assert_eq!(stores[0], stores[1]);
    // the synthetic pattern: every element is its row-major index
    assert!(stores[0].iter().enumerate().all(|(i, &v)| v == i as u16));
}
