//! The disk tier's private folder: spilled chunks in the format of
//! [`tessera_kernels::spill`], appended to segment files (`{n}.spill`, a new one once the
//! one written passes 256 MiB, or a 32nd of what the folder holds when that is more, so
//! that a large spill keeps few files open). A segment emptied of its chunks is kept as a
//! spare, its file as it is, to be written over from its start when a new segment is next
//! needed; spares are deleted by [`SpillDir::drop_spares`] (the store calls it once
//! nothing has been spilled or read back for a moment) or [`SpillDir::reclaim`]. Before a
//! new segment file is made, each full segment whose freed chunks are half of what it
//! holds gives their bytes back to the file system (holes punched, on Linux), so the disk
//! holds at most about twice the live bytes plus the segment being written and the spare
//! ones; [`SpillDir::held_bytes`] says what its chunks hold, [`SpillDir::spare_bytes`]
//! what the spare files hold besides, and [`SpillDir::reclaim`] gives all of that back at
//! once (for a disk tier at its budget). A segment keeps its file open while it holds a
//! chunk or waits as a spare.
//!
//! Why files are kept and written over: creating and deleting a file per chunk cost more
//! than writing the chunk on ext4 (inode allocation: 40% of the storage thread's time in a
//! spilling groupby, and a third still when freed files were kept for reuse, as a new
//! process creates its files again behind recently deleted ones). Deleting a 256 MiB
//! segment costs ext4 20–70 ms, and truncating one to zero to write it again made its
//! close wait for all its dirty pages to be written out (ext4's `auto_da_alloc`): 150 ms
//! at the end of every spilling groupby, for data about to be deleted.
//!
//! Each folder holds a lock file ([`LOCK_FILE`], the owner's pid inside) that its
//! [`SpillDir`] keeps exclusively locked (an advisory `flock` on unix, through std's
//! [`File::try_lock`]) for as long as it lives. The operating system drops the lock when the
//! owning process ends, however it ends, so [`remove_abandoned`] can tell a crashed owner's
//! folder (lock free) from a live one (lock held), as Dask's worker directories do.

use std::collections::BTreeMap;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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
/// A segment file is closed to new chunks once this many bytes are written to it, or a
/// [`SEGMENT_GROWTH`]th of what the folder holds when that is more.
const SEGMENT_BYTES: u64 = 256 << 20;
/// A new segment takes at least this fraction of the bytes the folder holds, so the
/// number of open segment files grows with the logarithm of the bytes spilled, not with
/// the bytes: a terabyte spilled is about 190 files, not 4,000 (a process may open 1,024
/// files by default on many Linux systems).
const SEGMENT_GROWTH: u64 = 32;
/// Chunks start at multiples of this in their segment, so a freed chunk's bytes are whole
/// file-system blocks.
const ALIGN: u64 = 4096;

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
    /// The segment files holding chunks, by number; the last is the one written.
    segments: BTreeMap<u64, Segment>,
    /// Numbers the next new segment (`{n}.spill`).
    next_segment: u64,
    /// The least a segment takes before it is closed to new chunks ([`SEGMENT_BYTES`]).
    segment_bytes: u64,
    /// Emptied segments kept to be written over (their files as they were).
    spares: Vec<Segment>,
}

/// One segment file: chunks appended one after another.
#[derive(Debug)]
struct Segment {
    path: Arc<Path>,
    file: File,
    /// Where the next chunk goes (past every chunk written, aligned).
    end: u64,
    /// It takes no new chunk once `end` reaches this (set when it is started:
    /// [`SpillDir::capacity`]).
    cap: u64,
    /// Chunks in it not freed yet.
    live: usize,
    /// Freed chunks whose bytes the file system still holds: (offset, bytes).
    dead: Vec<(u64, u64)>,
    /// Bytes of the chunks written to it, and of those since given back to the file system
    /// (the padding to [`ALIGN`] between chunks not counted).
    written: u64,
    given: u64,
    /// Where the bytes it may hold end: past `end` where the segment is written over
    /// (chunks freed before it was emptied, holes punched then included: an upper bound).
    len: u64,
}

impl Segment {
    /// Bytes of chunks it holds on disk, freed ones not given back included.
    fn held(&self) -> u64 {
        self.written - self.given
    }

    /// Bytes of its file past the chunks written since it was last emptied.
    fn stale(&self) -> u64 {
        self.len.saturating_sub(self.end)
    }

    /// Forgets its (freed) chunks, to be written over from its start (the file as it is).
    fn empty(&mut self) {
        self.end = 0;
        self.dead.clear();
        self.written = 0;
        self.given = 0;
    }

    /// Gives the bytes past its chunks back to the file system: a punched hole (Linux), or
    /// else the file cut at `end` (never to zero on ext4, which can punch: a file truncated
    /// to zero there is written out in full when closed).
    fn give_back_stale(&mut self) {
        let stale = self.stale();
        if stale == 0 {
            return;
        }
        if give_back(&self.file, self.end, stale) || self.file.set_len(self.end).is_ok() {
            self.len = self.end;
        }
    }

    /// Gives the freed chunks' bytes back to the file system (punched holes, adjacent
    /// chunks together, each with its padding).
    fn punch_dead(&mut self) {
        self.dead.sort_unstable();
        // (start, length, chunk bytes) of each run of adjacent freed chunks.
        let mut runs: Vec<(u64, u64, u64)> = Vec::new();
        for (offset, bytes) in self.dead.drain(..) {
            let len = bytes.next_multiple_of(ALIGN);
            match runs.last_mut() {
                Some((start, run, sum)) if *start + *run == offset => {
                    *run += len;
                    *sum += bytes;
                }
                _ => runs.push((offset, len, bytes)),
            }
        }
        self.given += runs
            .into_iter()
            .filter(|&(offset, len, _)| give_back(&self.file, offset, len))
            .map(|(_, _, bytes)| bytes)
            .sum::<u64>();
    }
}

/// One spilled chunk on disk: a range of a segment file.
#[derive(Debug)]
pub struct SpillFile {
    segment: u64,
    path: Arc<Path>,
    offset: u64,
    bytes: u64,
}

impl SpillFile {
    /// Bytes the chunk takes (header included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The segment file holding it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where in its segment file it starts.
    #[cfg(test)]
    fn offset(&self) -> u64 {
        self.offset
    }

    /// For error messages: the file and the range in it.
    fn describe(&self) -> String {
        format!(
            "{} (bytes {}..{})",
            self.path.display(),
            self.offset,
            self.offset + self.bytes
        )
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
                        segments: BTreeMap::new(),
                        next_segment: 0,
                        segment_bytes: SEGMENT_BYTES,
                        spares: Vec::new(),
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

    /// Appends one chunk to the segment being written (a new one when there is none or it
    /// is full). When writing fails, the segment's end stays where it was and the bytes
    /// past it are given back where holes can be punched (else counted as stale). Not
    /// synced: spilled data need not survive a crash.
    pub fn write(&mut self, data: &ChunkData) -> Result<SpillFile, DiskError> {
        let (number, segment) = self.segment_for_write()?;
        let offset = segment.end;
        let mut writer = BufWriter::with_capacity(
            IO_BUFFER,
            At {
                file: &segment.file,
                pos: offset,
                end: u64::MAX,
            },
        );
        let written = spill::write_chunk(data, &mut writer)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                writer.flush().map_err(|e| e.to_string())?;
                Ok(bytes)
            });
        drop(writer);
        match written {
            Ok(bytes) => {
                segment.len = segment.len.max(offset + bytes);
                segment.end = (offset + bytes).next_multiple_of(ALIGN);
                segment.live += 1;
                segment.written += bytes;
                Ok(SpillFile {
                    segment: number,
                    path: Arc::clone(&segment.path),
                    offset,
                    bytes,
                })
            }
            Err(cause) => {
                let len = segment.file.metadata().map_or(offset, |m| m.len());
                // (In a segment written over, the stale bytes past it go too.)
                let punched = give_back(&segment.file, offset, len.saturating_sub(offset));
                segment.len = if punched {
                    offset
                } else {
                    segment.len.max(len)
                };
                Err(DiskError::Write {
                    path: format!("{} (from byte {offset})", segment.path.display()),
                    cause,
                })
            }
        }
    }

    /// The segment to append to, with its number: the last one unless it is full, else a
    /// new one ([`Self::new_segment`]).
    fn segment_for_write(&mut self) -> Result<(u64, &mut Segment), DiskError> {
        let open = self
            .segments
            .last_key_value()
            .filter(|(_, last)| last.end < last.cap)
            .map(|(&number, _)| number);
        let number = match open {
            Some(number) => number,
            None => self.new_segment()?,
        };
        match self.segments.get_mut(&number) {
            Some(segment) => Ok((number, segment)),
            None => Err(DiskError::Write {
                path: self.path.display().to_string(),
                cause: "no segment to write to".into(),
            }),
        }
    }

    /// Starts a new segment: a spare one written over, else a new file (mode 0600), the
    /// disk growing only then. Its number.
    fn new_segment(&mut self) -> Result<u64, DiskError> {
        let mut segment = match self.spares.pop() {
            Some(spare) => spare,
            None => {
                self.punch_half_dead();
                self.new_file()?
            }
        };
        // A spare's file already holds its old length: written over to its end, it costs
        // no more disk, and none of it lingers as a stale tail behind a smaller capacity.
        segment.cap = self.capacity().max(segment.len / ALIGN * ALIGN);
        let number = self.next_segment;
        self.next_segment += 1;
        self.segments.insert(number, segment);
        Ok(number)
    }

    /// Gives back the freed chunks' bytes of every segment whose freed chunks are half of
    /// what it holds or more (before the disk grows by a segment).
    fn punch_half_dead(&mut self) {
        for segment in self.segments.values_mut() {
            let dead: u64 = segment.dead.iter().map(|&(_, bytes)| bytes).sum();
            if dead * 2 >= segment.held() {
                segment.punch_dead();
            }
        }
    }

    /// What a new segment takes before it is closed: [`SEGMENT_BYTES`], or a
    /// [`SEGMENT_GROWTH`]th of what the folder's chunks hold when that is more.
    fn capacity(&self) -> u64 {
        let share = (self.held_bytes() / SEGMENT_GROWTH).next_multiple_of(ALIGN);
        self.segment_bytes.max(share)
    }

    /// Creates the next segment file (mode 0600), empty.
    fn new_file(&self) -> Result<Segment, DiskError> {
        let path = self.path.join(format!("{}.spill", self.next_segment));
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(|e| DiskError::Write {
            path: path.display().to_string(),
            cause: e.to_string(),
        })?;
        Ok(Segment {
            path: path.into(),
            file,
            end: 0,
            cap: 0, // set by `new_segment`
            live: 0,
            dead: Vec::new(),
            written: 0,
            given: 0,
            len: 0,
        })
    }

    /// Bytes of chunks the folder's segment files hold on disk: the live ones, and freed
    /// ones not given back yet (see [`Self::reclaim`]); the padding between chunks (less
    /// than 4 KiB each, as a file system's blocks round small files) is not counted.
    pub fn held_bytes(&self) -> u64 {
        self.segments.values().map(Segment::held).sum()
    }

    /// Bytes the files hold besides [`Self::held_bytes`]: spare segments, and what segments
    /// written over still hold past their chunks. [`Self::reclaim`] gives them back.
    pub fn spare_bytes(&self) -> u64 {
        let spare: u64 = self.spares.iter().map(|s| s.len).sum();
        spare + self.segments.values().map(Segment::stale).sum::<u64>()
    }

    /// Gives back to the file system now every freed chunk's bytes and what segments hold
    /// past their chunks (punched holes, on Linux; elsewhere freed chunks stay until their
    /// segment empties) and deletes the spare segments, for a disk tier at its budget.
    pub fn reclaim(&mut self) {
        for segment in self.segments.values_mut() {
            segment.punch_dead();
            segment.give_back_stale();
        }
        self.drop_spares(usize::MAX);
    }

    /// Sets the bytes past which a segment takes no new chunk, the one being written
    /// included (tests).
    #[cfg(test)]
    pub(crate) fn set_segment_bytes(&mut self, bytes: u64) {
        self.segment_bytes = bytes;
        if let Some((_, last)) = self.segments.iter_mut().next_back() {
            last.cap = bytes;
        }
    }

    /// Deletes up to `most` spare segments (the oldest first); how many it deleted.
    pub fn drop_spares(&mut self, most: usize) -> usize {
        let n = most.min(self.spares.len());
        for spare in self.spares.drain(..n) {
            delete(spare);
        }
        n
    }

    /// Reads a chunk back (its length and checksum verified).
    pub fn read(&self, file: &SpillFile) -> Result<ChunkData, DiskError> {
        let read_error = |cause: String| DiskError::Read {
            path: file.describe(),
            cause,
        };
        let segment = self
            .segments
            .get(&file.segment)
            .ok_or_else(|| read_error("its segment file is gone".into()))?;
        let len = segment
            .file
            .metadata()
            .map_err(|e| read_error(e.to_string()))?
            .len();
        let end = file.offset + file.bytes;
        if len < end {
            return Err(DiskError::Corrupt {
                path: file.describe(),
                cause: format!("the file holds {len} bytes, the chunk ends at byte {end}"),
            });
        }
        let at = At {
            file: &segment.file,
            pos: file.offset,
            end,
        };
        let mut reader = BufReader::with_capacity(IO_BUFFER, at);
        spill::read_chunk(&mut reader).map_err(|e| match e {
            SpillError::Corrupt(cause) => DiskError::Corrupt {
                path: file.describe(),
                cause,
            },
            SpillError::Io(cause) | SpillError::Encode(cause) => read_error(cause),
        })
    }

    /// Frees a spilled chunk. A segment left with no chunk is kept as a spare (its file
    /// as it is, to be written over: deleting it now would hold the storage thread 20–70
    /// ms); otherwise the chunk's bytes wait for the next new segment or [`Self::reclaim`].
    /// Freed bytes are not punched one chunk at a time: on ext4 a punch first writes the
    /// range's dirty pages out and waits for them, data written moments ago and freed now,
    /// and a job's end frees thousands at once.
    pub fn remove(&mut self, file: SpillFile) {
        let Some(segment) = self.segments.get_mut(&file.segment) else {
            return;
        };
        debug_assert!(segment.live > 0, "a chunk freed twice: {}", file.describe());
        segment.live = segment.live.saturating_sub(1);
        if segment.live > 0 {
            segment.dead.push((file.offset, file.bytes));
            return;
        }
        if let Some(mut segment) = self.segments.remove(&file.segment) {
            segment.empty();
            self.spares.push(segment);
        }
    }
}

/// Closes a segment's file and deletes it (one gone is fine).
fn delete(segment: Segment) {
    let path = Arc::clone(&segment.path);
    drop(segment); // closed before it is deleted
    remove_quietly(&path);
}

/// A range of a file read or written at its own offsets (no shared cursor).
struct At<'a> {
    file: &'a File,
    pos: u64,
    /// Reads stop here.
    end: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = read_at(self.file, &mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for At<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = write_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, pos)
}

#[cfg(unix)]
fn write_at(file: &File, buf: &[u8], pos: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::write_at(file, buf, pos)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, pos)
}

#[cfg(windows)]
fn write_at(file: &File, buf: &[u8], pos: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_write(file, buf, pos)
}

/// Gives bytes `offset..offset + len` of `file` back to the file system (they read as
/// zeros after), where it can (a punched hole, Linux; true when done); elsewhere they stay
/// until their segment is deleted or emptied.
fn give_back(file: &File, offset: u64, len: u64) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
        else {
            return false;
        };
        if len == 0 {
            return true;
        }
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: fallocate reads only its integer arguments; the descriptor is open for
        // writing while `file` lives.
        let punched = unsafe { libc::fallocate(file.as_raw_fd(), mode, offset, len) } == 0;
        if !punched {
            debug!(error = %io::Error::last_os_error(), "cannot punch a hole in a spill segment");
        }
        punched
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        false
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

/// Removes a file, logging failures other than its being gone already.
fn remove_quietly(path: &Path) {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => warn!(path = %path.display(), error = %e, "cannot remove a spill segment"),
    }
}

/// Fault injection, used by the store when a fault rule fires: flips one byte in the middle
/// of the chunk's payload, in place, so that reading it back fails as corrupt.
pub fn corrupt_file(file: &SpillFile) -> io::Result<()> {
    let f = OpenOptions::new().read(true).write(true).open(&file.path)?;
    let payload = file
        .bytes
        .checked_sub(spill::HEADER_LEN)
        .filter(|&n| n > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no payload to corrupt"))?;
    let at = file.offset + spill::HEADER_LEN + payload / 2;
    let mut byte = [0u8; 1];
    if read_at(&f, &mut byte, at)? != 1 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "past the file's end",
        ));
    }
    byte[0] ^= 0xFF;
    write_at(&f, &byte, at).map(|_| ())
}

/// Fault injection, used by the store when a fault rule fires: wipes the chunk (zeros in its
/// place), as a lost disk block would, so that reading it back fails.
pub fn delete_file(file: &SpillFile) -> io::Result<()> {
    let f = OpenOptions::new().write(true).open(&file.path)?;
    let zeros = vec![0u8; IO_BUFFER];
    let mut at = At {
        file: &f,
        pos: file.offset,
        end: u64::MAX,
    };
    let mut left = file.bytes;
    while left > 0 {
        let n = usize::try_from(left).map_or(IO_BUFFER, |left| left.min(IO_BUFFER));
        at.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
