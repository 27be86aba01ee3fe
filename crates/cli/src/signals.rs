//! What the signals of a closed pipe and of an interrupt do to `retile`.
//!
//! The commands that print (`show`, `eval`, `plan`) end quietly when the
//! reader of their output goes away (`retile show ... | head`), as Unix
//! tools do. `stream` talks to sockets (object storage), where a dropped
//! connection must be an error with a message that the retries see, not a
//! silent death: it ignores `SIGPIPE`, so that writes return `EPIPE`.
//! SIGINT and SIGTERM stop a stream's input; what was taken is written. A
//! second one stops the retries of requests to object storage.

use std::sync::atomic::{AtomicBool, Ordering};

use retile_stream::Cancel;

/// Lets the process end quietly when the reader of its output goes away:
/// Rust ignores SIGPIPE, so `println!` would panic on the closed pipe instead.
pub fn end_quietly_on_closed_pipes() {
    set_sigpipe(libc::SIG_DFL);
}

/// Makes a write to a closed pipe or a dropped connection an error
/// (`EPIPE`) instead of the end of the process.
pub fn report_closed_pipes() {
    set_sigpipe(libc::SIG_IGN);
}

fn set_sigpipe(action: libc::sighandler_t) {
    // SAFETY: sets the disposition of one signal to a standard one; no
    // handler of ours is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, action);
    }
}

/// Set by SIGINT or SIGTERM: stop reading, write what was taken, close the store.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Set by a second SIGINT or SIGTERM: stop retrying requests to object
/// storage (what the server takes at once is still stored).
static STOP_RETRYING: AtomicBool = AtomicBool::new(false);

/// Whether SIGINT or SIGTERM arrived since [`stop_on_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The token that a second SIGINT or SIGTERM cancels: the S3 stores holding
/// it stop retrying, so that the stream ends within about a second.
pub fn second_interrupt() -> Cancel {
    Cancel::watching(&STOP_RETRYING)
}

extern "C" fn on_interrupt(signal: libc::c_int) {
    if !INTERRUPTED.swap(true, Ordering::Relaxed) {
        return;
    }
    STOP_RETRYING.store(true, Ordering::Relaxed);
    // SAFETY: signal(2) is async-signal-safe; a third signal acts as usual.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// Lets SIGINT and SIGTERM end a stream cleanly: the first one sets
/// [`interrupted`] (and interrupts a blocked system call, without
/// restarting it), so the input stops and what was taken is written,
/// retried within the retry budget; a second one cancels
/// [`second_interrupt`] (requests to object storage stop retrying, and the
/// store is closed within about a second); a third acts as usual.
pub fn stop_on_interrupt() {
    // SAFETY: the handler only touches atomics and calls signal(2), both
    // async-signal-safe; the sigaction struct is zeroed and then filled as
    // sigaction(2) says.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = 0;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
}
