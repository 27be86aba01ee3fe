//! One writer per store: the stream that writes a store holds its lock for
//! its whole life, and every other stream (another process, or another
//! stream of the same process) is refused with a message naming the owner.
//!
//! A local store's lock is the file `.retile.lock` in its directory, locked
//! with `flock`, holding the owner's process id, host and start time. The
//! kernel releases the lock when its process dies however it dies, so the
//! lock of a dead process is taken over by the next stream, which rewrites
//! the owner. The file is removed when the lock is released (it is checked,
//! once locked, to be the file at that path still, so that a stream never
//! holds the lock of a file another stream is removing).
//!
//! A store in S3 is locked by creating the object `PREFIX/.retile.lock`
//! only if it does not exist (`PutMode::Create`, an `If-None-Match: *`
//! put). Its owner rewrites it every [`REFRESH`], each time only if it is
//! still the version it wrote (`PutMode::Update`); a lock not rewritten for
//! [`STALE_AFTER`] (its process died, or hangs), or left on this host by a
//! process that no longer runs, is taken over with the same conditional
//! put, so that of two streams taking over one lock exactly one succeeds.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use object_store::aws::AmazonS3;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};

use retile_plan::StreamError;

use crate::error::DestError;

/// The lock's name in a store's directory or prefix.
pub(crate) const LOCK_NAME: &str = ".retile.lock";

/// How often the owner of an S3 lock rewrites it.
pub(crate) const REFRESH: Duration = Duration::from_secs(15);

/// How long an S3 lock may go without being rewritten before another
/// stream takes it over.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(90);

/// Who holds a lock: written into it by its owner.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Owner {
    pid: u32,
    host: String,
    /// When the stream began (RFC 3339, UTC).
    started: String,
    /// When an S3 lock was last rewritten (seconds since 1970).
    refreshed: u64,
}

/// Seconds since 1970.
fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// This machine's name (`?` where it cannot tell).
fn host_name() -> String {
    let mut name = [0u8; 256];
    // SAFETY: gethostname writes at most `name.len()` bytes into `name`.
    let ok = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    match ok && end > 0 {
        true => String::from_utf8_lossy(&name[..end]).into_owned(),
        false => "?".into(),
    }
}

impl Owner {
    /// This process, starting now.
    fn this_process() -> Owner {
        Owner {
            pid: std::process::id(),
            host: host_name(),
            started: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            refreshed: now_seconds(),
        }
    }

    /// The lock's text: one `name value` line each.
    fn to_text(&self) -> String {
        format!(
            "pid {}\nhost {}\nstarted {}\nrefreshed {}\n",
            self.pid, self.host, self.started, self.refreshed
        )
    }

    /// The owner a lock's text names (`None` if it is not one: a lock being
    /// written, or not retile's).
    fn parse(text: &str) -> Option<Owner> {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .map(str::trim)
        };
        Some(Owner {
            pid: field("pid")?.parse().ok()?,
            host: field("host")?.to_owned(),
            started: field("started")?.to_owned(),
            refreshed: field("refreshed").and_then(|s| s.parse().ok()).unwrap_or(0),
        })
    }

    /// Whether this owner is this very process.
    fn is_this_process(&self) -> bool {
        self.pid == std::process::id() && self.host == host_name()
    }

    /// Whether this owner is a process of this host that no longer runs.
    fn is_dead_here(&self) -> bool {
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return false;
        };
        // SAFETY: signal 0 sends nothing; it asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        self.host == host_name() && gone
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "process {} on host {}, writing since {}",
            self.pid, self.host, self.started
        )
    }
}

/// How the owner of a lock found held is named in a refusal.
fn describe(text: &str) -> String {
    match Owner::parse(text) {
        Some(owner) => owner.to_string(),
        None => "a stream that is starting (its lock names no owner yet)".into(),
    }
}

/// The refusal of a store another stream writes.
pub(crate) fn refusal(store: &Path, holder: &str) -> StreamError {
    StreamError::Invalid(format!(
        "{} is being written by another stream ({holder}; its lock is {}); wait for it to end, or write elsewhere (overwriting never deletes a store that a live stream writes)",
        store.display(),
        store.join(LOCK_NAME).display()
    ))
}

/// `flock`s `file` without waiting: whether it was taken (`false`: another
/// open file holds it).
fn try_flock(file: &File, operation: libc::c_int) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor `file` owns.
        if unsafe { libc::flock(file.as_raw_fd(), operation | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// Who holds the lock of the store at `dir`, if a live stream does.
pub(crate) fn live_owner(dir: &Path) -> io::Result<Option<String>> {
    let path = dir.join(LOCK_NAME);
    let mut file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if try_flock(&file, libc::LOCK_SH)? {
        return Ok(None);
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(Some(describe(&text)))
}

/// The lock of a local store, held until dropped (which removes the file).
#[derive(Debug)]
pub(crate) struct LocalLock {
    file: File,
    path: PathBuf,
    /// Remove the store's directory too when the lock is released (a start
    /// that failed in a directory it made).
    remove_dir: Mutex<bool>,
}

impl LocalLock {
    /// Locks the store at `dir` (an existing directory) for this process;
    /// `Err(owner)` where a live stream holds it.
    pub fn acquire(dir: &Path) -> io::Result<Result<LocalLock, String>> {
        let path = dir.join(LOCK_NAME);
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)?;
            if !try_flock(&file, libc::LOCK_EX)? {
                let mut text = String::new();
                file.read_to_string(&mut text)?;
                return Ok(Err(describe(&text)));
            }
            // the file may have been removed by the owner that released it
            // just before: then lock the new one
            let same = std::fs::metadata(&path)
                .is_ok_and(|m| file.metadata().is_ok_and(|f| f.ino() == m.ino()));
            if !same {
                continue;
            }
            file.set_len(0)?;
            file.rewind()?;
            file.write_all(Owner::this_process().to_text().as_bytes())?;
            return Ok(Ok(LocalLock {
                file,
                path,
                remove_dir: Mutex::new(false),
            }));
        }
    }

    /// Whether the store's directory is removed as well when the lock is
    /// released (if it is empty then).
    pub fn remove_dir_on_release(&self, remove: bool) {
        *self.remove_dir.lock().unwrap_or_else(|e| e.into_inner()) = remove;
    }
}

impl Drop for LocalLock {
    /// Removes the lock file while it is still locked, then releases it
    /// (closing the file); a stream waiting for the path then locks a new
    /// file.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.flush();
        if *self.remove_dir.lock().unwrap_or_else(|e| e.into_inner()) {
            if let Some(dir) = self.path.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

/// The lock object of a store in S3, kept fresh by a task until dropped
/// (which deletes it).
pub(crate) struct ObjectLock {
    store: AmazonS3,
    key: Key,
    runtime: tokio::runtime::Handle,
    refresher: tokio::task::JoinHandle<()>,
    /// Why the lock was lost (another stream took it over), if it was.
    lost: Arc<Mutex<Option<String>>>,
}

/// The S3 locks a stream of this process holds now, by key: a lock
/// object naming this process that is not among them was left by a stream
/// of this process that ended (its deletion cut short by a slow server),
/// and is stale.
static HELD_HERE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether a stream of this process holds the lock at `key`.
fn held_here(key: &Key) -> bool {
    let held = HELD_HERE.lock().unwrap_or_else(|e| e.into_inner());
    held.iter().any(|k| k == key.as_ref())
}

/// The error of a request about the lock object, explained as every S3
/// request's is (refused credentials named, one line).
fn request_error(url: &Path, doing: &str, e: object_store::Error) -> StreamError {
    crate::error::store_error(url, doing, crate::retry::explain(e))
}

impl ObjectLock {
    /// Locks the store at `prefix` (`url` in messages) for this process,
    /// taking over a stale lock; refused, naming the owner, where a live
    /// stream holds it.
    pub fn acquire(
        store: &AmazonS3,
        runtime: &tokio::runtime::Runtime,
        prefix: &Key,
        url: &Path,
    ) -> Result<ObjectLock, StreamError> {
        let key = prefix.clone().join(LOCK_NAME);
        let version = runtime.block_on(take(store, &key, url))?;
        HELD_HERE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(key.to_string());
        let lost = Arc::new(Mutex::new(None));
        let refresher = runtime.spawn(refresh(store.clone(), key.clone(), version, lost.clone()));
        Ok(ObjectLock {
            store: store.clone(),
            key,
            runtime: runtime.handle().clone(),
            refresher,
            lost,
        })
    }

    /// Whether the object named `key` is a lock (left out of what a store
    /// holds).
    pub fn is_lock(key: &Key) -> bool {
        key.filename() == Some(LOCK_NAME)
    }

    /// The owner of the lock object at `key` (the lock of the store at
    /// `url`), described, while it is alive; `None` where there is no lock
    /// or it is stale.
    pub fn live_owner(
        store: &AmazonS3,
        runtime: &tokio::runtime::Runtime,
        key: &Key,
        url: &Path,
    ) -> Result<Option<String>, StreamError> {
        let read = runtime.block_on(read_lock(store, key, url))?;
        Ok(read.and_then(|r| r.live_owner))
    }

    /// Fails once another stream took the lock over (this stream stalled
    /// for longer than [`STALE_AFTER`]): nothing more may be claimed.
    pub fn check(&self) -> Result<(), DestError> {
        match &*self.lost.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(why) => Err(why.clone().into()),
            None => Ok(()),
        }
    }
}

/// A lock object as read: its version, and its owner's description while
/// that owner is alive (`None`: stale, or left by a process of this host
/// that no longer runs).
struct ReadLock {
    version: UpdateVersion,
    live_owner: Option<String>,
}

/// Reads the lock object at `key` (`None`: there is none).
async fn read_lock(
    store: &AmazonS3,
    key: &Key,
    url: &Path,
) -> Result<Option<ReadLock>, StreamError> {
    let existing = match store.get(key).await {
        Ok(existing) => existing,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(request_error(url, "reading the store's lock object", e)),
    };
    let version = UpdateVersion {
        e_tag: existing.meta.e_tag.clone(),
        version: existing.meta.version.clone(),
    };
    let text = existing
        .bytes()
        .await
        .map_err(|e| request_error(url, "reading the store's lock object", e))?;
    let text = String::from_utf8_lossy(&text).into_owned();
    let owner = Owner::parse(&text);
    let stale = owner.as_ref().is_none_or(|o| {
        o.is_dead_here()
            || (o.is_this_process() && !held_here(key))
            || now_seconds().saturating_sub(o.refreshed) > STALE_AFTER.as_secs()
    });
    let live_owner = (!stale).then(|| describe(&text));
    Ok(Some(ReadLock {
        version,
        live_owner,
    }))
}

/// Creates the lock object at `key`, or takes over a stale one; returns the
/// version written.
async fn take(store: &AmazonS3, key: &Key, url: &Path) -> Result<UpdateVersion, StreamError> {
    let body = || PutPayload::from(Owner::this_process().to_text().into_bytes());
    let created = store
        .put_opts(key, body(), PutOptions::from(PutMode::Create))
        .await;
    match created {
        Ok(put) => return Ok(put.into()),
        Err(object_store::Error::AlreadyExists { .. }) => {}
        Err(e) => return Err(request_error(url, "creating the store's lock object", e)),
    }
    let version = match read_lock(store, key, url).await? {
        // released between the two requests: try again from the start
        None => return Box::pin(take(store, key, url)).await,
        Some(ReadLock {
            live_owner: Some(owner),
            ..
        }) => return Err(refusal(url, &owner)),
        Some(ReadLock { version, .. }) => version,
    };
    match store
        .put_opts(key, body(), PutOptions::from(PutMode::Update(version)))
        .await
    {
        Ok(put) => Ok(put.into()),
        // another stream took it over first
        Err(object_store::Error::Precondition { .. }) => {
            Err(refusal(url, "another stream that took over a stale lock"))
        }
        Err(e) => Err(request_error(url, "taking over a stale lock object", e)),
    }
}

/// Rewrites the lock every [`REFRESH`] while it is still the version last
/// written; records the loss if another stream took it over.
async fn refresh(
    store: AmazonS3,
    key: Key,
    mut version: UpdateVersion,
    lost: Arc<Mutex<Option<String>>>,
) {
    let owner = Owner::this_process();
    loop {
        tokio::time::sleep(REFRESH).await;
        let fresh = Owner {
            refreshed: now_seconds(),
            ..owner.clone()
        };
        let body = PutPayload::from(fresh.to_text().into_bytes());
        let put = PutOptions::from(PutMode::Update(version.clone()));
        match store.put_opts(&key, body, put).await {
            Ok(put) => version = put.into(),
            Err(object_store::Error::Precondition { .. }) => {
                *lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
                    "another stream took over this store's lock {key} (this stream did not renew it for {} s), so nothing more is written",
                    STALE_AFTER.as_secs()
                ));
                return;
            }
            // a failed renewal is tried again at the next; the lock goes
            // stale only after several
            Err(_) => {}
        }
    }
}

impl Drop for ObjectLock {
    /// Stops the renewals and deletes the lock object (unless it was lost
    /// to another stream), waiting a quarter of a second at most: a stream ending
    /// on a hung server must end promptly, and a lock left behind goes
    /// stale (or, on this host, is taken over at once: its process is gone).
    fn drop(&mut self) {
        self.refresher.abort();
        {
            let mut held = HELD_HERE.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(at) = held.iter().position(|k| k == self.key.as_ref()) {
                held.swap_remove(at);
            }
        }
        let lost = self.lost.lock().map_or(true, |l| l.is_some());
        if lost || tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let (store, key) = (self.store.clone(), self.key.clone());
        let _ = self.runtime.block_on(async move {
            tokio::time::timeout(Duration::from_millis(250), store.delete(&key)).await
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_reads_back_from_its_text() {
        let owner = Owner::this_process();
        assert_eq!(Owner::parse(&owner.to_text()), Some(owner.clone()));
        assert_eq!(owner.pid, std::process::id());
        assert!(!owner.is_dead_here());
        assert_eq!(Owner::parse(""), None);
        assert!(describe("").contains("starting"));
        assert!(describe(&owner.to_text()).contains(&format!("process {}", owner.pid)));
    }

    #[test]
    fn a_local_lock_is_held_once_and_released_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let lock = LocalLock::acquire(dir.path()).unwrap().unwrap();
        let owner = live_owner(dir.path()).unwrap().expect("held");
        assert!(
            owner.contains(&format!("process {}", std::process::id())),
            "{owner}"
        );
        // a second lock, even in this process, is refused
        let second = LocalLock::acquire(dir.path()).unwrap();
        assert!(second.is_err());
        drop(lock);
        assert!(!dir.path().join(LOCK_NAME).exists());
        assert_eq!(live_owner(dir.path()).unwrap(), None);
        let again = LocalLock::acquire(dir.path()).unwrap();
        assert!(again.is_ok());
    }

    #[test]
    fn a_lock_left_by_a_dead_process_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        // a lock file whose process is gone: nobody holds its flock
        let dead = Owner {
            pid: 0x7fff_fff0,
            ..Owner::this_process()
        };
        std::fs::write(dir.path().join(LOCK_NAME), dead.to_text()).unwrap();
        assert!(dead.is_dead_here());
        assert_eq!(live_owner(dir.path()).unwrap(), None);
        let _lock = LocalLock::acquire(dir.path()).unwrap().unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_NAME)).unwrap();
        assert_eq!(Owner::parse(&text).unwrap().pid, std::process::id());
    }
}
