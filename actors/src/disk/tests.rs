//! Tests of the spill folder: round trips, corruption, segments shared, written over,
//! punched and dropped.
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
        let len = fs::metadata(file.path()).unwrap().len();
        assert!(file.offset() + file.bytes() <= len);
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
fn a_wiped_chunk_reads_as_corrupt_and_frees_quietly() {
    let mut dir = dir();
    let file = dir.write(&tensor()).unwrap();
    let other = dir.write(&table()).unwrap();
    delete_file(&file).unwrap();
    assert!(matches!(dir.read(&file), Err(DiskError::Corrupt { .. })));
    assert_eq!(
        dir.read(&other).unwrap(),
        table(),
        "its neighbour is intact"
    );
    dir.remove(file);
    dir.remove(other);
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

/// Files in the folder besides the lock file.
fn segments(dir: &SpillDir) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != LOCK_FILE))
        .collect();
    files.sort();
    files
}

#[test]
fn chunks_share_a_segment_which_is_written_over_once_emptied() {
    let mut dir = dir();
    let big = dir.write(&tensor()).unwrap();
    let kept = dir.write(&table()).unwrap();
    assert_eq!(big.path(), kept.path(), "one segment");
    assert_eq!(kept.offset() % ALIGN, 0);
    assert!(kept.offset() >= big.bytes());
    dir.remove(big);
    assert_eq!(
        dir.read(&kept).unwrap(),
        table(),
        "the other chunk is intact"
    );
    let path = kept.path().to_path_buf();
    let len = fs::metadata(&path).unwrap().len();
    dir.remove(kept);
    assert_eq!(dir.held_bytes(), 0);
    assert_eq!(
        (fs::metadata(&path).unwrap().len(), dir.spare_bytes()),
        (len, len),
        "kept as it was (not truncated: ext4 would write it out on close)"
    );
    let again = dir.write(&table()).unwrap();
    assert_eq!((again.path(), again.offset()), (path.as_path(), 0));
    assert_eq!(dir.read(&again).unwrap(), table());
    assert_eq!(segments(&dir), vec![path], "no file created for it");
    assert_eq!(
        dir.spare_bytes(),
        len - again.bytes().next_multiple_of(ALIGN),
        "the old bytes past the new chunk"
    );
    dir.reclaim();
    assert_eq!(
        dir.spare_bytes(),
        0,
        "given back (punched, or the file cut)"
    );
    assert_eq!(
        dir.read(&again).unwrap(),
        table(),
        "the new chunk is intact"
    );
}

#[cfg(unix)]
#[test]
fn freed_halves_of_full_segments_go_back_before_a_new_segment() {
    use std::os::unix::fs::MetadataExt;
    let mut dir = dir();
    dir.segment_bytes = 3 * ALIGN; // three small tables fill a segment
    let mut chunks: Vec<SpillFile> = (0..4).map(|_| dir.write(&table()).unwrap()).collect();
    assert_ne!(
        chunks[3].path(),
        chunks[0].path(),
        "a full segment takes no more"
    );
    let path = chunks[0].path().to_path_buf();
    let punches = punches(&dir);
    let blocks = || fs::metadata(&path).unwrap().blocks();
    let full = blocks();
    let c = chunks.remove(2);
    dir.remove(chunks.remove(0));
    dir.remove(chunks.remove(0));
    assert_eq!(blocks(), full, "freed, but nothing new written: kept");
    // The second segment fills; the third's start gives the first one's half back.
    chunks.extend((0..3).map(|_| dir.write(&table()).unwrap()));
    assert!(
        !punches || blocks() < full,
        "given back before the disk grew"
    );
    assert_eq!(dir.read(&c).unwrap(), table(), "the live chunk is intact");
    dir.remove(c);
    assert_eq!(
        dir.drop_spares(usize::MAX),
        1,
        "emptied with its last chunk"
    );
    assert!(!path.exists(), "then deleted");
    for chunk in &chunks {
        assert_eq!(dir.read(chunk).unwrap(), table());
    }
}

/// Whether the file system under `dir` punches holes (a probe on a scratch file).
fn punches(dir: &SpillDir) -> bool {
    let scratch = dir.path().join("scratch");
    fs::write(&scratch, vec![1u8; 2 * ALIGN as usize]).unwrap();
    let punched = give_back(
        &File::options().write(true).open(&scratch).unwrap(),
        0,
        ALIGN,
    );
    fs::remove_file(&scratch).unwrap();
    punched
}

#[test]
fn held_bytes_count_freed_chunks_until_they_are_given_back() {
    let mut dir = dir();
    let (a, b) = (dir.write(&tensor()).unwrap(), dir.write(&table()).unwrap());
    let both = a.bytes() + b.bytes();
    assert_eq!(dir.held_bytes(), both);
    dir.remove(a);
    assert_eq!(dir.held_bytes(), both, "freed, still on disk");
    dir.reclaim();
    // Where holes cannot be punched the bytes stay until the segment empties.
    let held = if punches(&dir) { b.bytes() } else { both };
    assert_eq!(dir.held_bytes(), held);
    assert_eq!(dir.read(&b).unwrap(), table());
    let path = b.path().to_path_buf();
    dir.remove(b);
    assert_eq!(dir.held_bytes(), 0, "the segment emptied");
    assert!(dir.spare_bytes() > 0, "its file kept for reuse");
    dir.reclaim();
    assert_eq!(dir.spare_bytes(), 0);
    assert!(!path.exists(), "the spare deleted");
}

#[test]
fn a_failed_write_leaves_the_segment_as_it_was() {
    let mut dir = dir();
    let before = dir.write(&table()).unwrap();
    let writable = {
        let segment = dir.segments.get_mut(&0).unwrap();
        let read_only = File::open(&segment.path).unwrap();
        std::mem::replace(&mut segment.file, read_only)
    };
    let err = dir.write(&tensor()).unwrap_err();
    assert!(matches!(err, DiskError::Write { .. }), "{err:?}");
    assert_eq!(dir.held_bytes(), before.bytes(), "nothing counted");
    dir.segments.get_mut(&0).unwrap().file = writable;
    let after = dir.write(&tensor()).unwrap();
    assert_eq!(
        after.offset(),
        before.bytes().next_multiple_of(ALIGN),
        "written where it failed"
    );
    assert_eq!(
        dir.read(&before).unwrap(),
        table(),
        "its neighbour is intact"
    );
    assert_eq!(dir.read(&after).unwrap(), tensor());
}

#[test]
fn emptied_segments_are_kept_and_reused_until_dropped() {
    let mut dir = dir();
    dir.segment_bytes = 1; // every chunk fills its segment
    let files: Vec<SpillFile> = (0..3).map(|_| dir.write(&table()).unwrap()).collect();
    let paths: Vec<PathBuf> = files.iter().map(|f| f.path().to_path_buf()).collect();
    assert_eq!(segments(&dir), paths, "a segment each");
    let mut files = files.into_iter();
    let (first, second, last) = (files.next(), files.next(), files.next());
    dir.remove(second.unwrap());
    dir.remove(first.unwrap());
    assert_eq!(segments(&dir), paths, "emptied, kept");
    let last = last.unwrap();
    assert_eq!(dir.read(&last).unwrap(), table());
    let reused = dir.write(&tensor()).unwrap();
    assert_eq!(
        reused.path(),
        paths[0],
        "a new segment reuses the last emptied"
    );
    assert_eq!(dir.read(&reused).unwrap(), tensor());
    assert_eq!(segments(&dir), paths, "no file made");
    dir.remove(last);
    assert_eq!(dir.drop_spares(1), 1, "the oldest");
    assert!(!paths[1].exists() && paths[2].exists());
    assert_eq!(dir.drop_spares(usize::MAX), 1);
    assert_eq!(segments(&dir), vec![paths[0].clone()], "the spares deleted");
    assert_eq!(dir.read(&reused).unwrap(), tensor(), "the live one intact");
    let new = dir.write(&table()).unwrap();
    assert!(
        !paths.iter().any(|p| p == new.path()),
        "then files are made"
    );
    assert_eq!(dir.read(&new).unwrap(), table());
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

#[test]
fn a_large_spill_keeps_few_segment_files_open() {
    let mut dir = dir();
    // Each chunk (4,000 bytes of values) would fill a segment of this size on its own.
    dir.set_segment_bytes(ALIGN);
    let chunk = |i: usize| {
        let values = (0..500).map(|k| (i * 500 + k) as f64).collect();
        ChunkData::Tensor(HostTensor::new(vec![500], Buffer::F64(values)).unwrap())
    };
    let files: Vec<SpillFile> = (0..2000).map(|i| dir.write(&chunk(i)).unwrap()).collect();
    // A new segment takes a 32nd of what the folder holds: the files grow with the
    // logarithm of the chunks (155 here), not one per chunk (2,000).
    let n = segments(&dir).len();
    assert!((32..500).contains(&n), "{n} segment files for 2000 chunks");
    for (i, file) in files.iter().enumerate().step_by(37) {
        assert_eq!(dir.read(file).unwrap(), chunk(i), "chunk {i}");
    }
    // Emptied, the segments are spares; the next chunk writes over the last one emptied
    // (a large one) to its end rather than leave most of it as a stale tail.
    for file in files {
        dir.remove(file);
    }
    let spare = dir.spare_bytes();
    let file = dir.write(&chunk(0)).unwrap();
    assert_eq!(segments(&dir).len(), n, "a spare written over, no new file");
    let reused = dir.segments.values().next_back().unwrap();
    assert!(reused.cap >= reused.len / ALIGN * ALIGN && reused.cap > ALIGN);
    assert!(dir.spare_bytes() + dir.held_bytes() <= spare + ALIGN);
    assert_eq!(dir.read(&file).unwrap(), chunk(0));
    dir.remove(file);
    dir.reclaim();
    assert_eq!((dir.held_bytes(), dir.spare_bytes()), (0, 0));
    assert!(segments(&dir).is_empty(), "reclaim deletes the spares");
}
