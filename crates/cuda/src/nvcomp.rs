//! NVIDIA nvCOMP, loaded at run time (dlopen): the batched zstd and LZ4
//! compressors of its C API, bound to the signatures of nvCOMP 6 (the
//! headers of the `nvidia-libnvcomp-cu13` 6.0.0 wheel, `nvcomp/zstd.h` and
//! `nvcomp/lz4.h`; nvCOMP 4 and 5 named and shaped them differently, so a
//! library of another major version is refused).
//!
//! Where the library is looked for, in order:
//! 1. `RETILE_NVCOMP`: the library file, or a directory holding it (or
//!    holding `lib64/` or `lib/` with it); when set, nothing else is tried;
//! 2. the Python wheel `nvidia-libnvcomp-cu13` (or `-cu12`): its
//!    `nvidia/libnvcomp/lib64` under the site-packages of `$VIRTUAL_ENV`,
//!    then of `python3` (`python3 -c 'import nvidia.libnvcomp'`; `$PYTHON`
//!    names another interpreter);
//! 3. the system's: `libnvcomp.so.6` on the loader's path (`LD_LIBRARY_PATH`,
//!    the ldconfig cache), then `/usr/local/cuda/lib64`,
//!    `/usr/lib/x86_64-linux-gnu/nvcomp/13` and `/usr/lib/x86_64-linux-gnu/nvcomp/12`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use libloading::Library;

/// The major version of nvCOMP these bindings are written for.
pub const NVCOMP_MAJOR: u32 = 6;

/// The library's file name.
const LIBRARY: &str = "libnvcomp.so.6";

type Status = c_int;
type CuStream = *mut c_void;

/// `nvcompBatchedZstdCompressOpts_t` (nvCOMP 6): 64 reserved bytes.
#[repr(C)]
#[derive(Clone, Copy)]
struct ZstdOpts {
    reserved: [c_char; 64],
}

/// `nvcompBatchedLZ4CompressOpts_t` (nvCOMP 6): data type, bitshuffle
/// mode, 56 reserved bytes.
#[repr(C)]
#[derive(Clone, Copy)]
struct Lz4Opts {
    data_type: c_int,
    bitshuffle_mode: c_int,
    reserved: [c_char; 56],
}

/// `nvcompAlignmentRequirements_t`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Alignments {
    input: usize,
    output: usize,
    temp: usize,
}

/// `nvcompProperties_t`.
#[repr(C)]
#[derive(Default)]
struct Properties {
    version: u32,
    cudart_version: u32,
}

/// The functions of one compressor, generic over its options struct.
struct Compressor<O> {
    alignments: unsafe extern "C" fn(O, *mut Alignments) -> Status,
    temp_size: unsafe extern "C" fn(usize, usize, O, *mut usize, usize, CuStream) -> Status,
    max_output: unsafe extern "C" fn(usize, O, *mut usize) -> Status,
    #[allow(clippy::type_complexity)]
    compress: unsafe extern "C" fn(
        *const *const c_void,
        *const usize,
        usize,
        usize,
        *mut c_void,
        usize,
        *const *mut c_void,
        *mut usize,
        O,
        *mut Status,
        CuStream,
    ) -> Status,
}

/// Which of nvCOMP's compressors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Standard zstd frames.
    Zstd,
    /// LZ4 blocks (the LZ4 block format, bytes as they are).
    Lz4,
}

/// nvCOMP, loaded: where from, its version, and its batched compressors.
pub struct Nvcomp {
    path: PathBuf,
    version: (u32, u32, u32),
    status_string: unsafe extern "C" fn(Status) -> *const c_char,
    zstd: Compressor<ZstdOpts>,
    lz4: Compressor<Lz4Opts>,
    /// Kept last: the functions above point into it.
    _library: Library,
}

/// A compression's sizes: the most bytes one chunk compresses to, the
/// scratch memory a batch needs, and the alignment of each buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSizes {
    /// Most compressed bytes of one chunk.
    pub max_output: usize,
    /// Bytes of scratch memory on the GPU.
    pub temp: usize,
    /// Alignment of each input chunk.
    pub input_align: usize,
    /// Alignment of each output chunk.
    pub output_align: usize,
    /// Alignment of the scratch memory.
    pub temp_align: usize,
}

impl Nvcomp {
    /// Loads nvCOMP from the first place of the search path (this
    /// module's documentation) that holds it; the error lists every place
    /// tried and why it failed.
    ///
    /// ```no_run
    /// match retile_cuda::Nvcomp::load() {
    ///     Ok(nvcomp) => println!("{}", nvcomp.describe()),
    ///     Err(why) => println!("no nvCOMP: {why}"),
    /// }
    /// ```
    pub fn load() -> Result<Arc<Nvcomp>, String> {
        let mut tried = vec![];
        for candidate in candidates() {
            match Nvcomp::open(&candidate) {
                Ok(nvcomp) => return Ok(Arc::new(nvcomp)),
                Err(why) => tried.push(format!("{}: {why}", candidate.display())),
            }
        }
        Err(format!(
            "nvCOMP {NVCOMP_MAJOR} was not found (tried {}); install it with `pip install nvidia-libnvcomp-cu13` (or -cu12) or set RETILE_NVCOMP to its {LIBRARY}",
            tried.join("; ")
        ))
    }

    /// Opens the library at `path` (a file, or a name the loader looks up)
    /// and checks its version.
    pub fn open(path: &Path) -> Result<Nvcomp, String> {
        // SAFETY: loading nvCOMP runs its initialisers, which only set up
        // the library itself.
        let library = unsafe { Library::new(path) }.map_err(|e| e.to_string())?;
        // SAFETY: the symbols' types are those of nvCOMP 6's headers; the
        // version is checked before any other is called.
        let nvcomp = unsafe {
            let properties: unsafe extern "C" fn(*mut Properties) -> Status = *library
                .get(b"nvcompGetProperties\0")
                .map_err(|e| e.to_string())?;
            let mut p = Properties::default();
            if properties(&mut p) != 0 {
                return Err("nvcompGetProperties failed".into());
            }
            let version = (p.version / 1000, p.version % 1000 / 100, p.version % 100);
            if version.0 != NVCOMP_MAJOR {
                return Err(format!(
                    "nvCOMP {}.{}.{} is not nvCOMP {NVCOMP_MAJOR}, whose C API retile is built for",
                    version.0, version.1, version.2
                ));
            }
            let get = |name: &str| -> Result<*const c_void, String> {
                let symbol: libloading::Symbol<'_, *const c_void> = library
                    .get(format!("{name}\0").as_bytes())
                    .map_err(|e| format!("{name}: {e}"))?;
                Ok(*symbol)
            };
            // each symbol becomes the function type of the field it fills,
            // which states nvCOMP 6's C signature
            macro_rules! bind {
                ($name:literal) => {{
                    #[allow(clippy::missing_transmute_annotations)]
                    let function = std::mem::transmute::<*const c_void, _>(get($name)?);
                    function
                }};
            }
            Nvcomp {
                path: path.to_path_buf(),
                version,
                status_string: bind!("nvcompGetStatusString"),
                zstd: Compressor {
                    alignments: bind!("nvcompBatchedZstdCompressGetRequiredAlignments"),
                    temp_size: bind!("nvcompBatchedZstdCompressGetTempSize"),
                    max_output: bind!("nvcompBatchedZstdCompressGetMaxOutputChunkSize"),
                    compress: bind!("nvcompBatchedZstdCompressAsync"),
                },
                lz4: Compressor {
                    alignments: bind!("nvcompBatchedLZ4CompressGetRequiredAlignments"),
                    temp_size: bind!("nvcompBatchedLZ4CompressGetTempSize"),
                    max_output: bind!("nvcompBatchedLZ4CompressGetMaxOutputChunkSize"),
                    compress: bind!("nvcompBatchedLZ4CompressAsync"),
                },
                _library: library,
            }
        };
        Ok(nvcomp)
    }

    /// "nvCOMP 6.0.0 (path)".
    pub fn describe(&self) -> String {
        let (a, b, c) = self.version;
        format!("nvCOMP {a}.{b}.{c} ({})", self.path.display())
    }

    /// The library's version (major, minor, patch).
    pub fn version(&self) -> (u32, u32, u32) {
        self.version
    }

    /// The largest chunk `algorithm` compresses (bytes).
    pub fn max_chunk(algorithm: Algorithm) -> usize {
        match algorithm {
            // nvcompBatchedZstdCompressAsync: "Chunk sizes must not exceed 16 MB"
            Algorithm::Zstd => 16 << 20,
            // nvcompLZ4CompressionMaxAllowedChunkSize
            Algorithm::Lz4 => 1 << 24,
        }
    }

    /// nvCOMP's text for a status.
    fn status(&self, status: Status) -> String {
        // SAFETY: nvcompGetStatusString returns a static C string or null.
        let text = unsafe { (self.status_string)(status) };
        match text.is_null() {
            true => format!("status {status}"),
            // SAFETY: non-null: a NUL-terminated static string.
            false => unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
        }
    }

    fn check(&self, status: Status, doing: &str) -> Result<(), String> {
        match status {
            0 => Ok(()),
            s => Err(format!("nvCOMP failed {doing}: {}", self.status(s))),
        }
    }

    /// The sizes of compressing `chunks` chunks of at most `max_chunk`
    /// bytes, `total` bytes in all, with `algorithm` (on `stream`'s device).
    pub(crate) fn batch_sizes(
        &self,
        algorithm: Algorithm,
        chunks: usize,
        max_chunk: usize,
        total: usize,
        stream: CuStream,
    ) -> Result<BatchSizes, String> {
        let (mut a, mut temp, mut max_output) = (Alignments::default(), 0usize, 0usize);
        // SAFETY: plain out-parameters; the options are the defaults.
        let statuses = unsafe {
            match algorithm {
                Algorithm::Zstd => {
                    let (f, o) = (&self.zstd, zstd_opts());
                    [
                        (f.alignments)(o, &mut a),
                        (f.temp_size)(chunks, max_chunk, o, &mut temp, total, stream),
                        (f.max_output)(max_chunk, o, &mut max_output),
                    ]
                }
                Algorithm::Lz4 => {
                    let (f, o) = (&self.lz4, lz4_opts());
                    [
                        (f.alignments)(o, &mut a),
                        (f.temp_size)(chunks, max_chunk, o, &mut temp, total, stream),
                        (f.max_output)(max_chunk, o, &mut max_output),
                    ]
                }
            }
        };
        for (status, doing) in statuses.into_iter().zip([
            "reading its alignments",
            "sizing its scratch memory",
            "sizing its output",
        ]) {
            self.check(status, doing)?;
        }
        Ok(BatchSizes {
            max_output,
            temp,
            input_align: a.input.max(1),
            output_align: a.output.max(1),
            temp_align: a.temp.max(1),
        })
    }

    /// Starts compressing `chunks` chunks on `stream`: `inputs`, `sizes`,
    /// `outputs`, `out_sizes` and `statuses` are device arrays of `chunks`
    /// entries; `temp` is `temp_bytes` of device scratch.
    ///
    /// # Safety
    /// Every pointer must be a device address valid for the compression
    /// (the arrays, the chunks they point to, each output of at least
    /// `BatchSizes::max_output` bytes, aligned as [`BatchSizes`] says)
    /// until `stream` has run it.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn compress(
        &self,
        algorithm: Algorithm,
        inputs: u64,
        sizes: u64,
        max_chunk: usize,
        chunks: usize,
        temp: (u64, usize),
        outputs: u64,
        out_sizes: u64,
        statuses: u64,
        stream: CuStream,
    ) -> Result<(), String> {
        let (inputs, sizes) = (inputs as *const *const c_void, sizes as *const usize);
        let (outputs, out_sizes) = (outputs as *const *mut c_void, out_sizes as *mut usize);
        let (temp_ptr, temp_bytes) = (temp.0 as *mut c_void, temp.1);
        let statuses = statuses as *mut Status;
        // SAFETY: the caller's guarantees (this function's `# Safety`).
        let status = unsafe {
            match algorithm {
                Algorithm::Zstd => (self.zstd.compress)(
                    inputs,
                    sizes,
                    max_chunk,
                    chunks,
                    temp_ptr,
                    temp_bytes,
                    outputs,
                    out_sizes,
                    zstd_opts(),
                    statuses,
                    stream,
                ),
                Algorithm::Lz4 => (self.lz4.compress)(
                    inputs,
                    sizes,
                    max_chunk,
                    chunks,
                    temp_ptr,
                    temp_bytes,
                    outputs,
                    out_sizes,
                    lz4_opts(),
                    statuses,
                    stream,
                ),
            }
        };
        self.check(status, "starting a batched compression")
    }

    /// The most bytes a chunk of `chunk` bytes compresses to with
    /// `algorithm` (needs no GPU).
    pub fn max_output(&self, algorithm: Algorithm, chunk: usize) -> Result<usize, String> {
        let mut max = 0usize;
        // SAFETY: a plain out-parameter; the options are the defaults.
        let status = unsafe {
            match algorithm {
                Algorithm::Zstd => (self.zstd.max_output)(chunk, zstd_opts(), &mut max),
                Algorithm::Lz4 => (self.lz4.max_output)(chunk, lz4_opts(), &mut max),
            }
        };
        self.check(status, "sizing its output")?;
        Ok(max)
    }

    /// nvCOMP's text for the status of a chunk that failed.
    pub fn status_text(&self, status: i32) -> String {
        self.status(status)
    }
}

/// `nvcompBatchedZstdCompressDefaultOpts`.
fn zstd_opts() -> ZstdOpts {
    ZstdOpts { reserved: [0; 64] }
}

/// `nvcompBatchedLZ4CompressDefaultOpts`: bytes (`NVCOMP_TYPE_CHAR`), no
/// bitshuffle: the plain LZ4 block format every LZ4 decoder reads.
fn lz4_opts() -> Lz4Opts {
    Lz4Opts {
        data_type: 0,
        bitshuffle_mode: 0,
        reserved: [0; 56],
    }
}

/// The places nvCOMP is looked for, in order (this module's documentation).
fn candidates() -> Vec<PathBuf> {
    if let Some(given) = std::env::var_os("RETILE_NVCOMP") {
        return in_directory(Path::new(&given));
    }
    let mut places = vec![];
    let wheel_libs = |site: &Path| {
        [
            "nvidia/libnvcomp/lib64",
            "nvidia/libnvcomp/lib",
            "nvidia/nvcomp",
        ]
        .map(|sub| site.join(sub).join(LIBRARY))
    };
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        for site in site_packages(Path::new(&venv)) {
            places.extend(wheel_libs(&site));
        }
    }
    if let Some(dir) = python_wheel_dir() {
        places.push(dir.join("lib64").join(LIBRARY));
        places.push(dir.join("lib").join(LIBRARY));
    }
    places.retain(|p| p.is_file());
    places.push(PathBuf::from(LIBRARY));
    for dir in [
        "/usr/local/cuda/lib64",
        "/usr/lib/x86_64-linux-gnu/nvcomp/13",
        "/usr/lib/x86_64-linux-gnu/nvcomp/12",
    ] {
        places.push(Path::new(dir).join(LIBRARY));
    }
    places
}

/// `given` itself if it is a file (or not there: the error says so), else
/// the library inside it, its `lib64/` or its `lib/`.
fn in_directory(given: &Path) -> Vec<PathBuf> {
    if !given.is_dir() {
        return vec![given.to_path_buf()];
    }
    let inside = ["", "lib64", "lib"].map(|sub| given.join(sub).join(LIBRARY));
    match inside.iter().find(|p| p.is_file()) {
        Some(found) => vec![found.clone()],
        None => vec![given.join(LIBRARY)],
    }
}

/// The site-packages directories of a Python environment.
fn site_packages(env: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(env.join("lib")) else {
        return vec![];
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect()
}

/// The directory of the `nvidia.libnvcomp` package as `python3` (or
/// `$PYTHON`) imports it, asked once per process.
fn python_wheel_dir() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let out = Command::new(python)
            .args([
                "-c",
                "import os, nvidia.libnvcomp as m; print(os.path.dirname(m.__file__))",
            ])
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let dir = PathBuf::from(text.trim());
        (out.status.success() && dir.is_dir()).then_some(dir)
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_wrong_library_is_an_error_that_says_where_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nothing-here.so");
        let e = Nvcomp::open(&missing).err().unwrap();
        assert!(!e.is_empty());
        let not_a_library = dir.path().join(LIBRARY);
        std::fs::write(&not_a_library, b"not an ELF file").unwrap();
        assert!(Nvcomp::open(&not_a_library).is_err());
        // a directory is searched for the library, in itself, lib64/ and lib/
        assert_eq!(in_directory(dir.path()), vec![not_a_library.clone()]);
        std::fs::remove_file(&not_a_library).unwrap();
        std::fs::create_dir(dir.path().join("lib64")).unwrap();
        std::fs::write(dir.path().join("lib64").join(LIBRARY), b"x").unwrap();
        assert_eq!(
            in_directory(dir.path()),
            vec![dir.path().join("lib64").join(LIBRARY)]
        );
        assert_eq!(in_directory(&missing), vec![missing.clone()]);
    }

    /// The real library, where this machine has it (the wheel in the
    /// Python environment, or RETILE_NVCOMP): its version and the sizes of
    /// a batch, which need no GPU. `RETILE_REQUIRE_NVCOMP` makes its
    /// absence a failure.
    #[test]
    fn the_installed_library_is_nvcomp_6_and_sizes_a_batch() {
        let nvcomp = match Nvcomp::load() {
            Ok(n) => n,
            Err(why) => {
                assert!(
                    std::env::var_os("RETILE_REQUIRE_NVCOMP").is_none(),
                    "RETILE_REQUIRE_NVCOMP is set: {why}"
                );
                eprintln!("nvCOMP was NOT checked here: {why}");
                return;
            }
        };
        assert_eq!(nvcomp.version().0, NVCOMP_MAJOR);
        assert!(nvcomp.describe().starts_with("nvCOMP 6."));
        assert!(!nvcomp.status_text(10).is_empty());
        for algorithm in [Algorithm::Zstd, Algorithm::Lz4] {
            let max = nvcomp.max_output(algorithm, 1 << 16).unwrap();
            assert!((1 << 16..1 << 17).contains(&max), "{algorithm:?}: {max}");
        }
        eprintln!("checked {}", nvcomp.describe());
    }
}
