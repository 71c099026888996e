//! The disk tier's private folder: spilled chunks, one file each, in the format of
//! [`tessera_kernels::spill`]. A spilled chunk's file, once freed, is emptied and kept
//! for the next spill: creating and deleting a file per chunk cost more than writing the
//! chunk on ext4 (inode allocation, 40% of the storage thread's time in a spilling groupby).
//!
//! Each folder holds a lock file ([`LOCK_FILE`], the owner's pid inside) that its
//! [`SpillDir`] keeps exclusively locked (an advisory `flock` on unix, through std's
//! [`File::try_lock`]) for as long as it lives. The operating system drops the lock when the
//! owning process ends, however it ends, so [`remove_abandoned`] can tell a crashed owner's
//! folder (lock free) from a live one (lock held), as Dask's worker directories do.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tessera_kernels::spill::{self, SpillError};
use tessera_kernels::ChunkData;
use thiserror::Error;
use tracing::{debug, warn};

/// Numbers the spill folders this process creates.
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);
/// Names tried before giving up when folders of the same name already exist.
const CREATE_ATTEMPTS: u32 = 1000;
/// Buffer size of spill file writers and readers.
const IO_BUFFER: usize = 1 << 20;
/// Start of every spill folder's name.
const DIR_PREFIX: &str = "tessera-spill-";
/// The lock file in every spill folder, held locked by its owner while it lives.
pub const LOCK_FILE: &str = "owner.lock";
/// Emptied files a folder keeps for reuse at most (those beyond are deleted).
const MAX_FREE_FILES: usize = 4096;

/// Why a spill folder or a spilled chunk could not be created, written or read.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DiskError {
    /// The spill folder could not be created.
    #[error("cannot create spill folder {path}: {cause}")]
    Create {
        /// The folder.
        path: String,
        /// The I/O error's text.
        cause: String,
    },
    /// A chunk could not be written.
    #[error("cannot write spilled chunk {path}: {cause}")]
    Write {
        /// The file.
        path: String,
        /// The I/O or encoding error's text.
        cause: String,
    },
    /// A spilled chunk could not be read (missing file, I/O failure).
    #[error("cannot read spilled chunk {path}: {cause}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error's text.
        cause: String,
    },
    /// A spilled chunk's file does not hold what was written (truncated, checksum mismatch…).
    #[error("spilled chunk {path} is corrupt: {cause}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        cause: String,
    },
}

/// A private folder for spilled chunks (mode 0700), locked while it lives and removed with
/// everything in it when dropped.
#[derive(Debug)]
pub struct SpillDir {
    path: PathBuf,
    /// The locked [`LOCK_FILE`]: closing it (on drop or process death) frees the lock.
    _lock: File,
    /// Emptied files of freed chunks, written again before a new one is created.
    free: Vec<PathBuf>,
    /// Names the next new file (`{n}.spill`).
    next_file: u64,
}

/// One spilled chunk on disk.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    bytes: u64,
}

impl SpillFile {
    /// Bytes the file holds (header included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl SpillDir {
    /// Creates `{parent}/tessera-spill-{pid}-{n}` (`n` a process-wide counter, the next one
    /// tried while the name is taken), mode 0700 on unix, and locks its [`LOCK_FILE`].
    /// `parent` must exist.
    pub fn create(parent: &Path) -> Result<SpillDir, DiskError> {
        let pid = std::process::id();
        let mut builder = DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        for _ in 0..CREATE_ATTEMPTS {
            let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
            let path = parent.join(format!("{DIR_PREFIX}{pid}-{n}"));
            match builder.create(&path) {
                Ok(()) => {
                    let lock = match lock_new(&path, pid) {
                        Ok(lock) => lock,
                        Err(e) => {
                            let _ = fs::remove_dir_all(&path);
                            return Err(create_error(&path, format!("cannot lock it: {e}")));
                        }
                    };
                    debug!(path = %path.display(), "created spill folder");
                    return Ok(SpillDir {
                        path,
                        _lock: lock,
                        free: Vec::new(),
                        next_file: 0,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(create_error(&path, e.to_string())),
            }
        }
        Err(create_error(
            parent,
            format!("{CREATE_ATTEMPTS} folder names were all taken"),
        ))
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one chunk to an emptied file kept from a freed chunk, or else to a new file
    /// (mode 0600, never replacing one); when writing fails the file is removed. Not
    /// synced: spilled data need not survive a crash.
    pub fn write(&mut self, data: &ChunkData) -> Result<SpillFile, DiskError> {
        let (path, file) = self.open_for_write()?;
        match write_to(file, data) {
            Ok(bytes) => Ok(SpillFile { path, bytes }),
            Err(cause) => {
                remove_quietly(&path);
                Err(DiskError::Write {
                    path: path.display().to_string(),
                    cause,
                })
            }
        }
    }

    /// A kept emptied file, opened for writing (one gone since is skipped; one that cannot
    /// be opened now stays kept, and the error is returned), or else a new one.
    fn open_for_write(&mut self) -> Result<(PathBuf, File), DiskError> {
        while let Some(path) = self.free.pop() {
            let mut options = OpenOptions::new();
            options.write(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
            match options.open(&path) {
                Ok(file) => return Ok((path, file)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    let error = DiskError::Write {
                        path: path.display().to_string(),
                        cause: e.to_string(),
                    };
                    self.free.push(path);
                    return Err(error);
                }
            }
        }
        let path = self.path.join(format!("{}.spill", self.next_file));
        self.next_file += 1;
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(file) => Ok((path, file)),
            Err(e) => Err(DiskError::Write {
                path: path.display().to_string(),
                cause: e.to_string(),
            }),
        }
    }

    /// Reads a chunk back (its length and checksum verified).
    pub fn read(&self, file: &SpillFile) -> Result<ChunkData, DiskError> {
        let path = file.path.display().to_string();
        let read_error = |e: io::Error| DiskError::Read {
            path: path.clone(),
            cause: e.to_string(),
        };
        let f = File::open(&file.path).map_err(read_error)?;
        let len = f.metadata().map_err(read_error)?.len();
        if len != file.bytes {
            return Err(DiskError::Corrupt {
                path,
                cause: format!("file holds {len} bytes, {} were written", file.bytes),
            });
        }
        let mut reader = BufReader::with_capacity(IO_BUFFER, f.take(file.bytes));
        spill::read_chunk(&mut reader).map_err(|e| match e {
            SpillError::Corrupt(cause) => DiskError::Corrupt { path, cause },
            SpillError::Io(cause) | SpillError::Encode(cause) => DiskError::Read { path, cause },
        })
    }

    /// Frees a spilled file: empties it and keeps it for a later write, or deletes it when
    /// the folder keeps 4096 already (one already gone is fine).
    pub fn remove(&mut self, file: SpillFile) {
        if self.free.len() < MAX_FREE_FILES {
            match OpenOptions::new().write(true).open(&file.path) {
                Ok(f) if f.set_len(0).is_ok() => {
                    self.free.push(file.path);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                _ => {}
            }
        }
        remove_quietly(&file.path);
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        match fs::remove_dir_all(&self.path) {
            Ok(()) => debug!(path = %self.path.display(), "removed spill folder"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => warn!(path = %self.path.display(), error = %e, "cannot remove spill folder"),
        }
    }
}

/// Creates and locks `{dir}/{LOCK_FILE}`, writing `pid` into it for people reading the folder.
/// The file is locked under another name and then renamed (the lock stays with it), so
/// [`remove_abandoned`] never finds it unlocked while its owner lives.
fn lock_new(dir: &Path, pid: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let making = dir.join(format!("{LOCK_FILE}.new"));
    let mut file = options.open(&making)?;
    file.try_lock().map_err(io::Error::from)?;
    writeln!(file, "{pid}")?;
    fs::rename(&making, dir.join(LOCK_FILE))?;
    Ok(file)
}

/// Removes the spill folders under `parent` whose owner is gone: those whose [`LOCK_FILE`]
/// nobody holds locked. A folder whose lock is held (a live owner, in this process or
/// another), that has no lock file (one being created this instant, or left by a version
/// without locks) or that cannot be opened (another user's) is left alone, as is anything
/// not a real folder named like a spill folder. Returns the folders removed; failures are
/// logged, never raised: a leftover must not stop a session from starting.
pub fn remove_abandoned(parent: &Path) -> usize {
    let entries = match fs::read_dir(parent) {
        Ok(entries) => entries,
        Err(e) => {
            warn!(path = %parent.display(), error = %e, "cannot list the spill parent folder");
            return 0;
        }
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let is_spill = entry.file_name().to_string_lossy().starts_with(DIR_PREFIX);
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !(is_spill && is_dir) {
            continue;
        }
        let path = entry.path();
        let Ok(lock) = OpenOptions::new().write(true).open(path.join(LOCK_FILE)) else {
            continue;
        };
        if lock.try_lock().is_err() {
            continue;
        }
        // Locked now by us: an owner cannot come back, and nobody else will remove it.
        match fs::remove_dir_all(&path) {
            Ok(()) => {
                removed += 1;
                debug!(path = %path.display(), "removed an abandoned spill folder");
            }
            Err(e) => {
                warn!(path = %path.display(), error = %e, "cannot remove an abandoned spill folder")
            }
        }
    }
    removed
}

fn create_error(path: &Path, cause: String) -> DiskError {
    DiskError::Create {
        path: path.display().to_string(),
        cause,
    }
}

/// Writes `data` through a buffer; returns bytes written, or the error's text.
fn write_to(file: File, data: &ChunkData) -> Result<u64, String> {
    let mut w = BufWriter::with_capacity(IO_BUFFER, file);
    let bytes = spill::write_chunk(data, &mut w).map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.error().to_string())?;
    Ok(bytes)
}

/// Removes a file, logging failures other than its being gone already.
fn remove_quietly(path: &Path) {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => warn!(path = %path.display(), error = %e, "cannot remove spilled chunk file"),
    }
}

/// Fault injection, used by the store when a fault rule fires: flips one byte in the middle
/// of the file's payload, in place, so that reading it back fails as corrupt.
pub fn corrupt_file(file: &SpillFile) -> io::Result<()> {
    let mut f = OpenOptions::new().read(true).write(true).open(&file.path)?;
    let len = f.metadata()?.len();
    let payload = len
        .checked_sub(spill::HEADER_LEN)
        .filter(|&n| n > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no payload to corrupt"))?;
    let at = spill::HEADER_LEN + payload / 2;
    let mut byte = [0u8; 1];
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(&mut byte)?;
    byte[0] ^= 0xFF;
    f.seek(SeekFrom::Start(at))?;
    f.write_all(&byte)
}

/// Fault injection, used by the store when a fault rule fires: deletes the file, so that
/// reading it back fails.
pub fn delete_file(file: &SpillFile) -> io::Result<()> {
    fs::remove_file(&file.path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    use tessera_kernels::{Buffer, HostTensor};

    fn tensor() -> ChunkData {
        let n = 10_000;
        ChunkData::Tensor(
            HostTensor::new(
                vec![100, n / 100],
                Buffer::F64((0..n).map(|i| i as f64 / 3.0).collect()),
            )
            .unwrap(),
        )
    }

    fn table() -> ChunkData {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(StringArray::from(vec![Some("x"), None, Some("zz")])),
        ];
        ChunkData::Table(RecordBatch::try_from_iter(["a", "b"].into_iter().zip(columns)).unwrap())
    }

    fn dir() -> SpillDir {
        SpillDir::create(&std::env::temp_dir()).unwrap()
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn folder_and_files_are_private() {
        let mut dir = dir();
        assert_eq!(mode(dir.path()), 0o700);
        let file = dir.write(&tensor()).unwrap();
        assert_eq!(mode(file.path()), 0o600);
    }

    #[test]
    fn tensors_and_tables_round_trip() {
        let mut dir = dir();
        for data in [tensor(), table()] {
            let file = dir.write(&data).unwrap();
            assert_eq!(file.bytes(), fs::metadata(file.path()).unwrap().len());
            assert!(file.path().starts_with(dir.path()));
            assert_eq!(dir.read(&file).unwrap(), data);
            dir.remove(file);
        }
    }

    #[test]
    fn a_corrupted_file_reads_as_corrupt() {
        let mut dir = dir();
        for data in [tensor(), table()] {
            let file = dir.write(&data).unwrap();
            corrupt_file(&file).unwrap();
            let err = dir.read(&file).unwrap_err();
            assert!(matches!(err, DiskError::Corrupt { .. }), "{err:?}");
        }
    }

    #[test]
    fn a_truncated_file_reads_as_corrupt() {
        let mut dir = dir();
        let file = dir.write(&tensor()).unwrap();
        let f = OpenOptions::new().write(true).open(file.path()).unwrap();
        f.set_len(file.bytes() / 2).unwrap();
        assert!(matches!(dir.read(&file), Err(DiskError::Corrupt { .. })));
    }

    #[test]
    fn a_deleted_file_reads_as_an_error_and_removes_quietly() {
        let mut dir = dir();
        let file = dir.write(&tensor()).unwrap();
        delete_file(&file).unwrap();
        assert!(matches!(dir.read(&file), Err(DiskError::Read { .. })));
        dir.remove(file);
    }

    #[test]
    fn drop_removes_the_folder_and_its_files() {
        let mut dir = dir();
        let path = dir.path().to_path_buf();
        let file = dir.write(&tensor()).unwrap();
        let file_path = file.path().to_path_buf();
        drop(dir);
        assert!(!file_path.exists());
        assert!(!path.exists());
    }

    #[test]
    fn folders_are_distinct() {
        let (a, b) = (dir(), dir());
        assert_ne!(a.path(), b.path());
    }

    #[test]
    fn a_freed_file_is_emptied_and_written_again() {
        let mut dir = dir();
        let big = dir.write(&tensor()).unwrap();
        let kept = dir.write(&table()).unwrap();
        let path = big.path().to_path_buf();
        dir.remove(big);
        assert_eq!(fs::metadata(&path).unwrap().len(), 0, "emptied when freed");
        let again = dir.write(&table()).unwrap();
        assert_eq!(again.path(), path, "the freed file is reused");
        assert_eq!(fs::metadata(&path).unwrap().len(), again.bytes());
        assert_eq!(dir.read(&again).unwrap(), table());
        assert_eq!(
            dir.read(&kept).unwrap(),
            table(),
            "the other file is intact"
        );
        assert_ne!(kept.path(), again.path());
        let files = || fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files(), 3, "two spill files and the lock");
        // A freed file deleted since (an injected fault) is skipped, not reused.
        dir.remove(again);
        fs::remove_file(&path).unwrap();
        let fresh = dir.write(&tensor()).unwrap();
        assert_ne!(fresh.path(), path);
        assert_eq!(dir.read(&fresh).unwrap(), tensor());
    }

    #[test]
    fn freed_files_beyond_the_limit_are_deleted() {
        let mut dir = dir();
        let files: Vec<SpillFile> = (0..MAX_FREE_FILES + 2)
            .map(|_| dir.write(&table()).unwrap())
            .collect();
        let paths: Vec<PathBuf> = files.iter().map(|f| f.path().to_path_buf()).collect();
        files.into_iter().for_each(|f| dir.remove(f));
        let left = paths.iter().filter(|p| p.exists()).count();
        assert_eq!(left, MAX_FREE_FILES);
        assert!(paths[..MAX_FREE_FILES].iter().all(|p| p.exists()));
    }

    #[test]
    fn abandoned_folders_are_removed_and_live_ones_kept() {
        let parent = dir(); // a private parent, so other tests' folders are not in play
        let mut live = SpillDir::create(parent.path()).unwrap();
        let live_file = live.write(&tensor()).unwrap();
        // A crashed owner's folder: a lock file nobody holds, and spilled data.
        let dead = parent.path().join("tessera-spill-999999-0");
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join(LOCK_FILE), "999999\n").unwrap();
        fs::write(dead.join("job0-chunk1.spill"), vec![0u8; 4096]).unwrap();
        // Left alone: a folder without a lock file, and a file named like a folder.
        let unlocked = parent.path().join("tessera-spill-999999-1");
        fs::create_dir(&unlocked).unwrap();
        let plain = parent.path().join("tessera-spill-999999-2");
        fs::write(&plain, b"not a folder").unwrap();
        let other = parent.path().join("someone-else");
        fs::create_dir(&other).unwrap();
        fs::write(other.join(LOCK_FILE), "1\n").unwrap();

        assert_eq!(remove_abandoned(parent.path()), 1);
        assert!(!dead.exists(), "the dead owner's folder is gone");
        assert!(live.path().exists() && unlocked.exists() && plain.exists() && other.exists());
        assert_eq!(
            live.read(&live_file).unwrap(),
            tensor(),
            "the live folder is intact"
        );
        let pid = fs::read_to_string(live.path().join(LOCK_FILE)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        // Once its owner drops it, the lock is free and its folder removed with it.
        let live_path = live.path().to_path_buf();
        drop(live);
        assert!(!live_path.exists());
        assert_eq!(remove_abandoned(parent.path()), 0);
        assert_eq!(remove_abandoned(&parent.path().join("missing")), 0);
    }

    #[test]
    fn creating_under_a_regular_file_fails() {
        let dir = dir();
        let plain = dir.path().join("plain");
        fs::write(&plain, b"not a folder").unwrap();
        assert!(matches!(
            SpillDir::create(&plain),
            Err(DiskError::Create { .. })
        ));
    }
}
