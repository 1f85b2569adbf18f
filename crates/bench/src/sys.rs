//! The few operating-system calls the bench needs and std does not offer: CPU pinning, the
//! open-file limit, a clock shared between processes, SIGTERM, and reading a process's CPU
//! time and memory from /proc.
//!
//! This is the crate's only `unsafe`: a handful of libc calls, each on plain values it owns.

#![allow(unsafe_code)]

use std::time::Duration;

/// Pins the calling thread (and every thread it starts afterwards) to one CPU. Call before
/// the tokio runtime is built so its workers inherit the mask.
pub fn pin_self_to_cpu(cpu: usize) -> std::io::Result<()> {
    // SAFETY: `cpu_set_t` is a plain bit array; zeroed is the empty set. We pass its exact
    // size and a valid pointer, for pid 0 (this thread).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Raises the soft open-file limit to the hard one (10,000 held calls need 10,000 sockets
/// here and as many in the server, which inherits the limit). Returns the new soft limit.
pub fn raise_nofile() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write one `rlimit` we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(lim.rlim_cur)
}

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every process on the machine, so a
/// commit time taken in the decider process compares with a response time taken here.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one `timespec` we own.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// User plus system CPU time of a whole process (all threads), from /proc/PID/stat;
/// pid 0 means this process.
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let path = if pid == 0 {
        "/proc/self/stat".to_string()
    } else {
        format!("/proc/{pid}/stat")
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name may contain spaces: the fields we want come after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')', index 0 is field 3 (state): utime (field 14) is index 11, stime index 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let tick = clock_ticks_per_second();
    Some(Duration::from_nanos((utime + stime) * 1_000_000_000 / tick))
}

/// Resident set size of a process in bytes, from /proc/PID/status `VmRSS`.
pub fn process_rss(pid: u32) -> Option<u64> {
    process_status_bytes(pid, "VmRSS")
}

/// A kB line of /proc/PID/status in bytes: `VmRSS` (resident now), `VmHWM` (the peak).
pub fn process_status_bytes(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Sends SIGTERM to a process.
pub fn sigterm(pid: u32) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    // SAFETY: kill takes two plain integers.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `taskset` is on PATH (used to pin child processes).
pub fn have_taskset() -> bool {
    std::process::Command::new("taskset")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
