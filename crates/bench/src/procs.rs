//! Child processes: the `supervise-server` under test, the bare hyper baseline server (this
//! binary again, `serve-baseline`) and the out-of-process decider (`decide`). Each is
//! optionally pinned with `taskset`, logs to a file in the run's temporary folder and is
//! stopped with SIGTERM when dropped.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::client::{Target, get_ok};

/// Finds `supervise-server`: the explicit path, else next to this executable, else in the
/// sibling profile folder (target/release ↔ target/debug).
pub fn find_server_bin(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let name = format!("supervise-server{}", std::env::consts::EXE_SUFFIX);
    let mut candidates = vec![dir.join(&name)];
    if let Some(target) = dir.parent() {
        for profile in ["release", "debug"] {
            candidates.push(target.join(profile).join(&name));
        }
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// A free loopback port (bound then released; the child binds it right after).
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(l.local_addr()?.port())
}

/// A child process that is SIGTERMed (then killed) when dropped.
#[derive(Debug)]
pub struct Proc {
    pub child: Child,
    pub pid: u32,
    pub log: PathBuf,
    pub name: String,
}

impl Proc {
    /// Starts `program args…`, pinned to `cpu` with taskset when given.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(&str, &str)],
        cpu: Option<usize>,
        log: PathBuf,
    ) -> Result<Proc> {
        let out = std::fs::File::create(&log)?;
        let err = out.try_clone()?;
        let mut cmd = match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu.to_string()).arg(program);
                c
            }
            None => Command::new(program),
        };
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        // taskset execs the program, so the pid is the program's.
        let pid = child.id();
        Ok(Proc {
            child,
            pid,
            log,
            name: name.to_string(),
        })
    }

    /// The last lines of the child's log, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// Waits until `GET /healthz` answers 200 (or the child dies, or 15 s pass).
    pub async fn wait_healthy(&mut self, target: &Target) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited ({status}) before answering; its log:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            if get_ok(target, "/healthz").await {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not answer /healthz within 15 s; its log:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERM, then waits up to `within` for the exit: how long it took and the status
    /// (`None`: still running; [`Drop`] kills it).
    pub async fn terminate_timed(
        &mut self,
        within: Duration,
    ) -> Result<(Duration, Option<ExitStatus>)> {
        let sent = Instant::now();
        crate::sys::sigterm(self.pid).with_context(|| format!("SIGTERM to {}", self.name))?;
        while sent.elapsed() < within {
            if let Some(status) = self.child.try_wait()? {
                return Ok((sent.elapsed(), Some(status)));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok((sent.elapsed(), None))
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}

/// How to start one `supervise-server`.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub bin: PathBuf,
    pub db: PathBuf,
    pub grace_secs: u64,
    pub bottles: Vec<(String, Ipv4Addr)>,
    pub cpu: Option<usize>,
    /// `--max-pending-per-bottle` (0: no cap).
    pub max_pending_per_bottle: u64,
    /// `SUPERVISE_LOG` filter for the child.
    pub log_filter: String,
}

/// A running server under test.
#[derive(Debug)]
pub struct Server {
    pub proc: Proc,
    pub target: Target,
    pub db: PathBuf,
}

impl Server {
    pub async fn start(spec: &ServerSpec, log: PathBuf) -> Result<Server> {
        let port = free_port()?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut args = vec![
            "--db".to_string(),
            spec.db.display().to_string(),
            "--listen".into(),
            addr.to_string(),
            "--grace".into(),
            spec.grace_secs.to_string(),
            // The bench files thousands of proposals per bottle and never repeats a change:
            // no cap, unless the scenario measures the cap's own cost.
            "--max-pending-per-bottle".into(),
            spec.max_pending_per_bottle.to_string(),
        ];
        for (slug, ip) in &spec.bottles {
            args.push("--bottle".into());
            args.push(format!("{slug}={ip}"));
        }
        let mut proc = Proc::spawn(
            "supervise-server",
            &spec.bin,
            &args,
            &[("SUPERVISE_LOG", spec.log_filter.as_str())],
            spec.cpu,
            log,
        )?;
        let target = Target::new(addr);
        proc.wait_healthy(&target).await?;
        Ok(Server {
            proc,
            target,
            db: spec.db.clone(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid
    }
}
