//! Thread pools shared across streams: the tiling threads and the writer
//! threads of every stream (a pyramid's levels, an acquisition's arrays)
//! that asks for as many, so that N streams do not make N pools that spin
//! while another works.

use std::sync::{Arc, Mutex, Weak};

/// Every pool made and still alive, by name and thread count.
type Pools = Vec<(&'static str, usize, Weak<rayon::ThreadPool>)>;

/// The pool of `threads` threads (0: one per core) named `name-0`,
/// `name-1`, ...: the one another caller made for the same name and
/// count, if it is alive, else a new one.
///
/// ```
/// use retile_plan::shared_pool;
/// let a = shared_pool("doc-pool", 2)?;
/// assert!(std::sync::Arc::ptr_eq(&a, &shared_pool("doc-pool", 2)?));
/// assert!(!std::sync::Arc::ptr_eq(&a, &shared_pool("doc-pool", 3)?));
/// # Ok::<(), rayon::ThreadPoolBuildError>(())
/// ```
pub fn shared_pool(
    name: &'static str,
    threads: usize,
) -> Result<Arc<rayon::ThreadPool>, rayon::ThreadPoolBuildError> {
    static POOLS: Mutex<Pools> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    pools.retain(|(_, _, pool)| pool.strong_count() > 0);
    if let Some(pool) = pools
        .iter()
        .find(|(n, count, _)| *n == name && *count == threads)
        .and_then(|(_, _, pool)| pool.upgrade())
    {
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map(Arc::new)?;
    pools.push((name, threads, Arc::downgrade(&pool)));
    Ok(pool)
}
