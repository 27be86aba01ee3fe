//! The command's output going into a pipe that its reader closes early.

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(["show", "(256,256):(256,1)"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(output.status.signal(), Some(libc::SIGPIPE), "{stderr}");
    }
}

/// A stdout whose reader is already gone: a pipe with its read end closed.
/// Both ends are close-on-exec, so that a child another test spawns while
/// the read end is still open does not inherit it and keep the pipe
/// readable (a race CI met: `show` then wrote into the pipe and exited 0).
#[cfg(unix)]
fn closed_pipe() -> Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) fills the two descriptors, each owned once below.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just made and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

#[cfg(unix)]
#[test]
fn printing_commands_end_quietly_on_a_closed_stdout_and_stream_says_so() {
    use std::os::unix::process::ExitStatusExt;
    let quiet: [&[&str]; 4] = [
        &["show", "(4,4):(4,1)"],
        &["eval", "coalesce((2,(1,6)):(1,(6,2)))"],
        &["plan", "stream", "--shape", "4,4,6", "--tile", "2,2,3"],
        &[
            "plan", "stream", "--shape", "4,4,6", "--tile", "2,2,3", "--json",
        ],
    ];
    for args in quiet {
        let output = Command::new(env!("CARGO_BIN_EXE_retile"))
            .args(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {stderr}"
        );
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
    // a stream has sockets to report on: a closed stdout is an error with a message
    let output = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args([
            "stream", "--shape", "0,4,4", "--tile", "1,2,2", "--planes", "3",
        ])
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.signal(), None, "{stderr}");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write to stdout"), "{stderr}");
}
