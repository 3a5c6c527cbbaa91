//! A small file system of its own for disk-full tests: a tmpfs of a few
//! MiB mounted on a fresh directory (needs root), unmounted on drop, and a
//! filler file that takes every free byte until it is removed.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// A mounted tmpfs, unmounted (and its directory removed) on drop.
pub struct SmallDisk {
    pub dir: PathBuf,
}

impl SmallDisk {
    /// Mount a tmpfs of `size` (e.g. `"2m"`), or say why not: the test is
    /// then skipped with that reason, unless `HANDWIRE_DISK_TESTS_REQUIRED`
    /// is set (as CI does, running as root), when it fails.
    pub fn mount(tag: &str, size: &str) -> Result<SmallDisk, String> {
        let dir = super::temp_path(tag, ".mnt");
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0777"),
                "tmpfs",
            ])
            .arg(&dir)
            .output();
        match out {
            Ok(out) if out.status.success() => Ok(SmallDisk { dir }),
            Ok(out) => {
                let _ = std::fs::remove_dir(&dir);
                Err(format!(
                    "cannot mount a tmpfs (needs root): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(format!("cannot run mount: {e}"))
            }
        }
    }

    /// Mount, or print why the test is skipped and return `None` (panics
    /// instead when `HANDWIRE_DISK_TESTS_REQUIRED` is set).
    pub fn mount_or_skip(test: &str, size: &str) -> Option<SmallDisk> {
        match SmallDisk::mount(test, size) {
            Ok(disk) => Some(disk),
            Err(why) if std::env::var_os("HANDWIRE_DISK_TESTS_REQUIRED").is_some() => {
                panic!("{test}: {why} (HANDWIRE_DISK_TESTS_REQUIRED is set)")
            }
            Err(why) => {
                // Straight to the terminal: libtest's capture would hide it.
                let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
                None
            }
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Fill every free byte with `filler`; returns its path (remove it to
    /// give the space back).
    pub fn fill(&self) -> PathBuf {
        let path = self.path("filler");
        let mut file = std::fs::File::create(&path).expect("create filler");
        let chunk = vec![0u8; 4096];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = file.sync_all();
        path
    }

    /// Give back the space [`fill`](Self::fill) took.
    pub fn free(&self) {
        let _ = std::fs::remove_file(self.path("filler"));
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}
