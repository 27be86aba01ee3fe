//! What the signals of a closed pipe and of an interrupt do to `retile`.
//!
//! The commands that print (`show`, `eval`, `plan`) end quietly when the
//! reader of their output goes away (`retile show ... | head`), as Unix
//! tools do. `stream` talks to sockets (object storage), where a dropped
//! connection must be an error with a message that the retries see, not a
//! silent death: it ignores `SIGPIPE`, so that writes return `EPIPE`.
//! SIGINT and SIGTERM stop a stream's input; what was taken is written.

use std::sync::atomic::{AtomicBool, Ordering};

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

/// Whether SIGINT or SIGTERM arrived since [`stop_on_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Lets SIGINT and SIGTERM end a stream cleanly: the first one sets
/// [`interrupted`] (and interrupts a blocked system call, without
/// restarting it); a second one acts as usual.
pub fn stop_on_interrupt() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe;
    // the sigaction struct is zeroed and then filled as sigaction(2) says.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
}
