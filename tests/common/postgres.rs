//! A throwaway PostgreSQL cluster for the tests of one run: Debian's
//! `postgresql` package, `initdb` in a temporary folder (as the `postgres`
//! user when the tests run as root), the server listening only on a unix
//! socket in that folder. A watchdog process stops it (`pg_ctl stop -m
//! immediate`) and removes the folder once the test process is gone, so
//! nothing outlives the run. Each test gets a database of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// How long the server may take to accept connections after it starts.
const CLUSTER_START_WAIT_MS: u64 = 30_000;
/// The port number names the socket file; nothing listens on TCP.
const CLUSTER_PORT: u16 = 5432;

pub struct Cluster {
    /// Holds the data folder and the socket.
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub data: PathBuf,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The folder of the newest PostgreSQL server programs installed.
fn server_bin() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    found.sort_by_key(|bin| {
        bin.parent().and_then(|version| version.file_name()?.to_str()?.parse::<u32>().ok()).unwrap_or(0)
    });
    found.pop().expect(
        "PostgreSQL's server programs are not installed (/usr/lib/postgresql/*/bin): \
         apt-get install postgresql (.ci/run does)",
    )
}

fn running_as_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|output| output.stdout.starts_with(b"0\n"))
}

/// `program` run as the user that owns the cluster.
pub fn as_cluster_owner(program: &Path) -> Command {
    if running_as_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

impl Cluster {
    /// A cluster of its own (a test that stops its server uses one, so the
    /// run's shared cluster goes on serving the others).
    pub fn start() -> Cluster {
        let bin = server_bin();
        let dir = tempfile::Builder::new().prefix("seed-pg-").tempdir().expect("temporary folder").keep();
        if running_as_root() {
            let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(&dir).status().expect("chown");
            assert!(status.success(), "chown of {} to postgres failed", dir.display());
        }
        let data = dir.join("data");
        let initdb = as_cluster_owner(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"])
            .output()
            .expect("initdb");
        assert!(initdb.status.success(), "initdb failed: {}", String::from_utf8_lossy(&initdb.stderr));
        let cluster = Cluster { dir, bin, data };
        // Watched from here on, so a server that fails to start is cleaned up too.
        cluster.watch(std::process::id());
        cluster.start_server();
        cluster
    }

    /// `pg_ctl` with `arguments` on this cluster; panics naming its output if it fails.
    fn pg_ctl(&self, arguments: &[&str]) {
        let output = as_cluster_owner(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(arguments)
            .output()
            .expect("pg_ctl");
        assert!(
            output.status.success(),
            "pg_ctl {arguments:?}: {}{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
    }

    /// Stops the server as a crash would (`-m immediate`: no checkpoint,
    /// the next start recovers from the write-ahead log).
    pub fn stop_immediately(&self) {
        self.pg_ctl(&["stop", "-m", "immediate"]);
    }

    /// Starts the server (again, after a stop), listening only on a unix
    /// socket in the cluster's folder, and waits until it accepts connections.
    pub fn start_server(&self) {
        let options =
            format!("-k {} -c listen_addresses='' -p {CLUSTER_PORT} -c max_connections=200", self.dir.display());
        self.pg_ctl(&["-o", &options, "-w", "-t", &(CLUSTER_START_WAIT_MS / 1000).to_string(), "start"]);
    }

    /// A fresh, empty database on this cluster, by URL.
    pub fn fresh_database(&self) -> String {
        let name = format!("seed_test_{}_{}", std::process::id(), DATABASES.fetch_add(1, Ordering::Relaxed));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// Starts the process that stops the server once `pid` is gone.
    fn watch(&self, pid: u32) {
        let stop = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {} {} -D {} stop -m immediate >/dev/null 2>&1; rm -rf {}",
            if running_as_root() { "runuser -u postgres --" } else { "" },
            self.bin.join("pg_ctl").display(),
            self.data.display(),
            self.dir.display()
        );
        // `setsid --fork` returns at once, leaving the watchdog in a session
        // of its own that outlives this process.
        let status = Command::new("setsid")
            .args(["--fork", "sh", "-c", &stop])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("the cluster's watchdog");
        assert!(status.success(), "the cluster's watchdog did not start");
    }

    /// The URL of `database` on this cluster.
    pub fn url(&self, database: &str) -> String {
        format!("postgres:///{database}?host={}&port={CLUSTER_PORT}&user=postgres", self.dir.display())
    }

    /// Runs one SQL statement as the cluster's superuser.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        psql_url(&self.url(database), sql)
    }
}

/// The cluster of this run, started the first time a test asks.
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(Cluster::start)
}

/// A fresh, empty database on the run's cluster, by URL.
pub fn fresh_database() -> String {
    cluster().fresh_database()
}

/// Runs SQL against the database `url` names (a test's land), as the
/// cluster's superuser.
pub fn psql_url(url: &str, sql: &str) -> String {
    let output = Command::new("psql")
        .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .expect("psql");
    assert!(output.status.success(), "psql {sql:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}
