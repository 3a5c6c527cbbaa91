//! Real PostgreSQL and Redis servers for the scale-out tests, started on
//! loopback from Debian's packages with a private data directory and free
//! ports, and stopped (directory removed) when dropped.
//!
//! PostgreSQL refuses to run as root, so as root `initdb` and `pg_ctl` run
//! through `runuser -u postgres`. Password authentication is on for TCP
//! (`scram-sha-256`), so a wrong password is a real refusal. `fsync` is off:
//! these servers hold test data only, and the tests are about sharing, not
//! durability.
//!
//! [`available`] says why the servers cannot run here (not installed); a
//! test then prints the reason and passes, unless `HANDWIRE_CLUSTER_REQUIRED=1`
//! (set by `.ci/run`) makes the absence a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The database user and password of the test server (a throw-away server
/// on loopback; not a secret).
pub const PG_USER: &str = "handwire";
pub const PG_PASSWORD: &str = "test-only-password";

/// Why PostgreSQL and Redis cannot be started here, or `None` if they can.
pub fn unavailable_reason() -> Option<String> {
    if pg_bin().is_none() {
        return Some(
            "PostgreSQL is not installed (apt-get install postgresql: initdb/pg_ctl under \
             /usr/lib/postgresql/*/bin)"
                .into(),
        );
    }
    if which("redis-server").is_none() {
        return Some("redis-server is not installed (apt-get install redis-server)".into());
    }
    None
}

/// `true` when the servers can run. Otherwise prints why and returns
/// `false`, or panics when `HANDWIRE_CLUSTER_REQUIRED=1`.
pub fn available(test: &str) -> bool {
    let Some(reason) = unavailable_reason() else {
        return true;
    };
    if std::env::var("HANDWIRE_CLUSTER_REQUIRED").as_deref() == Ok("1") {
        panic!("{test}: required (HANDWIRE_CLUSTER_REQUIRED=1) but {reason}");
    }
    // Straight to stderr: libtest captures `eprintln!` of passing tests,
    // and a skip must be seen.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
    false
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The newest PostgreSQL's bin directory.
fn pg_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// A port free on 127.0.0.1 a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// `program args…`, as the `postgres` user when we are root.
fn as_postgres(program: &Path) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A private PostgreSQL server on 127.0.0.1.
pub struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
}

impl Postgres {
    /// initdb a new directory and start the server on a free port.
    pub fn start() -> Postgres {
        let bin = pg_bin().expect("PostgreSQL installed");
        let dir = super::temp_path("pg", "");
        std::fs::create_dir_all(&dir).unwrap();
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PG_PASSWORD).unwrap();
        if is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.args(["-R", "postgres:postgres"]).arg(&dir);
                    c
                },
                "chown",
            );
        }
        let data = dir.join("data");
        let mut initdb = as_postgres(&bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                PG_USER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["-E", "UTF8", "--no-sync"]);
        run(initdb, "initdb");
        let port = free_port();
        let pg = Postgres { dir, bin, port };
        pg.pg_ctl_start();
        pg
    }

    fn pg_ctl_start(&self) {
        let mut start = as_postgres(&self.bin.join("pg_ctl"));
        start
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("log"))
            .arg("-o")
            .arg(format!(
                "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
                 -c fsync=off -c max_connections=200",
                self.port,
                self.dir.display()
            ))
            .args(["-w", "-t", "30", "start"]);
        run(start, "pg_ctl start");
    }

    /// Stop the server (fast shutdown: connections are cut).
    pub fn stop(&self) {
        let mut stop = as_postgres(&self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "fast", "-w", "stop"]);
        run(stop, "pg_ctl stop");
    }

    /// Start it again after [`stop`](Self::stop), on the same port.
    pub fn start_again(&self) {
        self.pg_ctl_start();
    }

    /// The connection string for the test user (`password` overrides the right one).
    pub fn url_with_password(&self, password: &str) -> String {
        format!(
            "postgres://{PG_USER}:{password}@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// The connection string for the test user.
    pub fn url(&self) -> String {
        self.url_with_password(PG_PASSWORD)
    }

    /// Run SQL through psql as the test user; its output, or what psql said.
    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-U", PG_USER, "-d", "postgres"])
            .args(["-v", "ON_ERROR_STOP=1", "-tAc", sql])
            .arg("-p")
            .arg(self.port.to_string())
            .env("PGPASSWORD", PG_PASSWORD)
            .output()
            .expect("psql");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// [`try_psql`](Self::try_psql) that must succeed.
    pub fn psql(&self, sql: &str) -> String {
        self.try_psql(sql)
            .unwrap_or_else(|e| panic!("psql {sql}: {e}"))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let mut stop = as_postgres(&self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"]);
        let _ = stop.stdout(Stdio::null()).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A private Redis server on 127.0.0.1 (no persistence).
pub struct RedisServer {
    child: Option<Child>,
    dir: PathBuf,
    pub port: u16,
}

impl RedisServer {
    /// Start on a free port.
    pub fn start() -> RedisServer {
        let dir = super::temp_path("redis", "");
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = RedisServer {
            child: None,
            dir,
            port: free_port(),
        };
        server.restart();
        server
    }

    /// Start (again) on the same port, and wait until it answers.
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kill the server (SIGKILL) and wait for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
