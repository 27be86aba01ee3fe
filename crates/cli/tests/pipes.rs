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
