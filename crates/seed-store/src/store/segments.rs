//! The land log as files: fact envelopes in land-seq order, appended to
//! segment files a group at a time, each group synced before it is
//! acknowledged: the primary record of the log store (`log_store`), which
//! keeps a fact in about its own size.
//!
//! A segment is `segments/<first land seq, 20 digits>.log`. Each fact is one
//! frame: the magic `SLF2`, the envelope's length (u32, little-endian), the
//! land seq (u64, little-endian), the envelope, and a check: a CRC-32 (4
//! bytes, little-endian) over the length, the land seq and the envelope.
//! Frames written before issue 50's twenty-fifth step carry the magic
//! `SLF1` and, as their check, the first 8 bytes of a keyed BLAKE3 over the
//! same bytes; they are read as they are, and a segment may hold both. The
//! check only finds damage (a torn write, a flipped bit): what a fact says
//! is held by its id, its body's hash and its signature, which every reader
//! that trusts a fact checks after the frame's.
//! Framing is read as strictly as a fact: a wrong magic, a length over
//! [`FRAME_ENVELOPE_BYTES_MAX`], a land seq out of order or a check that does
//! not hold is damage, named by file and offset. Reading never panics and
//! takes time linear in what it reads.
//!
//! After a crash, the last frame of the last segment may be cut short: a
//! read-only open reads up to it, an open for appending cuts it off. Every
//! whole frame before it stays (a group is acknowledged only once synced, so
//! every acknowledged fact is a whole frame).

use crate::store::crash_points::{self, CrashPoint};
use crate::store::derived_key::DerivedKeyContext;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The first bytes of every frame written: one closed by a CRC-32.
pub const FRAME_MAGIC: [u8; 4] = *b"SLF2";
/// The first bytes of a frame closed by a keyed BLAKE3, as frames were
/// written before the CRC (read, never written).
pub const FRAME_MAGIC_CHECKED_BY_BLAKE3: [u8; 4] = *b"SLF1";
/// Magic, envelope length, land seq.
const FRAME_HEAD_BYTES: usize = 4 + 4 + 8;
/// The longest check closing a frame (the keyed BLAKE3 prefix).
const FRAME_CHECK_BYTES_MAX: usize = 8;
/// BLAKE3 key-derivation context of a frame's check.
static FRAME_CHECK_CONTEXT: DerivedKeyContext = DerivedKeyContext::new("seed segment frame v1");
/// The longest envelope a frame may hold: far over any fact a land accepts
/// (`fact::FACT_BODY_BYTES_CEILING` and a header), so a length above it is damage.
pub const FRAME_ENVELOPE_BYTES_MAX: usize = 16 * 1024 * 1024;
/// A segment is closed and the next one started once it holds this many bytes.
pub const SEGMENT_BYTES_MAX_DEFAULT: u64 = 256 * 1024 * 1024;
const SEGMENT_SUFFIX: &str = ".log";

#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} at byte {offset}: the land log is damaged ({damage})")]
    Damaged { path: PathBuf, offset: u64, damage: Damage },
    #[error("a group must continue the log at land seq {expected}, not {got}")]
    OutOfOrder { expected: u64, got: u64 },
    #[error("an envelope of {len} bytes is over the frame's limit of {FRAME_ENVELOPE_BYTES_MAX} bytes")]
    TooLarge { len: usize },
}

/// What is wrong at a damaged place of the land log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    #[error("no frame starts here")]
    NoFrameHere,
    #[error("a frame of {len} bytes is over the limit of {FRAME_ENVELOPE_BYTES_MAX}")]
    FrameOverLimit { len: u32 },
    #[error("the check of land seq {land_seq}'s frame does not hold")]
    CheckFails { land_seq: u64 },
    #[error("it starts where the segment before it did")]
    StartsWherePreviousDid,
    #[error("land seq {found} where {expected} belongs")]
    LandSeqOutOfPlace { found: u64, expected: u64 },
    #[error("an earlier write failed and could not be cut back; reopen the land")]
    EarlierWriteNotCutBack,
    #[error("a segment before the last ends inside a frame")]
    EarlierSegmentCutShort,
    #[error("it ends at land seq {end} but the next segment starts at {next_first}")]
    GapBeforeNextSegment { end: u64, next_first: u64 },
    #[error("no frame of land seq {land_seq} with an envelope of {len} bytes")]
    NoSuchFrame { land_seq: u64, len: usize },
    #[error("the segment ends inside this frame")]
    EndsInsideFrame,
    #[error("the frame is before the span's first at {first_offset}")]
    BeforeSpan { first_offset: u64 },
    #[error("the frame runs past the next at {next_offset}")]
    RunsPastNext { next_offset: u64 },
}

/// One segment file: where it starts in the land log and its length in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    first_land_seq: u64,
    path: PathBuf,
    /// Bytes of whole frames (a cut-short frame after them is not counted).
    len: u64,
}

/// The segments of one land log.
pub struct SegmentLog {
    dir: PathBuf,
    segments: Vec<Segment>,
    /// The land seq the next frame carries.
    next_land_seq: u64,
    /// Bytes of a frame cut short at the end of the last segment (read-only
    /// opens leave it; an open for appending cut it off).
    torn_tail_bytes: u64,
    segment_bytes_max: u64,
    writer: Option<fs::File>,
    /// A failed write could not be cut back: appending stops until reopened.
    cut_back_failed: bool,
    /// The frames of the group being appended, kept between groups so that
    /// each group writes into memory already faulted in rather than growing
    /// a fresh buffer (the kernel zeroing its pages) every time.
    frames: Vec<u8>,
}

/// The most bytes [`SegmentLog`] keeps for its next group's frames; a
/// larger group's buffer is let go once it is written.
pub const SEGMENT_FRAMES_BUFFER_BYTES_KEPT_MAX: usize = 4 << 20;

/// How a frame's check is made, which its magic says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameCheck {
    /// A CRC-32 (IEEE), 4 bytes little-endian: every frame written now. It
    /// costs a small part of a BLAKE3 over the same bytes, and a reader
    /// that trusts a fact hashes its bytes again for the fact's id anyway.
    Crc,
    /// The first 8 bytes of a keyed BLAKE3: frames written before the CRC.
    Blake3,
}

impl FrameCheck {
    fn of_magic(magic: &[u8]) -> Option<FrameCheck> {
        match magic {
            magic if magic == FRAME_MAGIC => Some(FrameCheck::Crc),
            magic if magic == FRAME_MAGIC_CHECKED_BY_BLAKE3 => Some(FrameCheck::Blake3),
            _ => None,
        }
    }

    fn magic(self) -> [u8; 4] {
        match self {
            FrameCheck::Crc => FRAME_MAGIC,
            FrameCheck::Blake3 => FRAME_MAGIC_CHECKED_BY_BLAKE3,
        }
    }

    /// The bytes of the check closing a frame.
    fn bytes(self) -> usize {
        match self {
            FrameCheck::Crc => 4,
            FrameCheck::Blake3 => FRAME_CHECK_BYTES_MAX,
        }
    }

    /// The check of a frame of `len` bytes' `envelope` at `land_seq`, in
    /// the first [`FrameCheck::bytes`] of the array.
    fn of_frame(self, len: u32, land_seq: u64, envelope: &[u8]) -> [u8; FRAME_CHECK_BYTES_MAX] {
        let mut check = [0; FRAME_CHECK_BYTES_MAX];
        match self {
            FrameCheck::Crc => {
                let mut crc = crc32fast::Hasher::new();
                crc.update(&len.to_le_bytes());
                crc.update(&land_seq.to_le_bytes());
                crc.update(envelope);
                check[..4].copy_from_slice(&crc.finalize().to_le_bytes());
            }
            FrameCheck::Blake3 => {
                let mut hasher = FRAME_CHECK_CONTEXT.hasher();
                hasher.update(&len.to_le_bytes());
                hasher.update(&land_seq.to_le_bytes());
                hasher.update(envelope);
                check.copy_from_slice(&hasher.finalize().as_bytes()[..FRAME_CHECK_BYTES_MAX]);
            }
        }
        check
    }

    /// Whether `check` is the check of that frame.
    fn holds(self, len: u32, land_seq: u64, envelope: &[u8], check: &[u8]) -> bool {
        self.of_frame(len, land_seq, envelope)[..self.bytes()] == *check
    }
}

/// Writes one frame into `out`, closed by the CRC.
fn write_frame(land_seq: u64, envelope: &[u8], out: &mut Vec<u8>) -> Result<(), SegmentError> {
    write_frame_checked_by(FrameCheck::Crc, land_seq, envelope, out)
}

/// Writes one frame into `out`, closed by `check`.
fn write_frame_checked_by(
    check: FrameCheck,
    land_seq: u64,
    envelope: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), SegmentError> {
    if envelope.len() > FRAME_ENVELOPE_BYTES_MAX {
        return Err(SegmentError::TooLarge { len: envelope.len() });
    }
    let len = envelope.len() as u32;
    out.extend_from_slice(&check.magic());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&land_seq.to_le_bytes());
    out.extend_from_slice(envelope);
    out.extend_from_slice(&check.of_frame(len, land_seq, envelope)[..check.bytes()]);
    Ok(())
}

/// What reading a frame at some offset found.
enum FrameRead {
    Whole {
        land_seq: u64,
        envelope: Vec<u8>,
        bytes: u64,
        check: FrameCheck,
    },
    /// The file ends inside this frame.
    CutShort,
    End,
}

/// A frame head's envelope length, land seq and check, or why it is no
/// frame's head (no magic, a length over the limit).
fn frame_head(head: &[u8; FRAME_HEAD_BYTES]) -> Result<(u32, u64, FrameCheck), Damage> {
    let check = FrameCheck::of_magic(&head[..4]).ok_or(Damage::NoFrameHere)?;
    let len = u32::from_le_bytes(head[4..8].try_into().expect("four bytes"));
    let land_seq = u64::from_le_bytes(head[8..16].try_into().expect("eight bytes"));
    if len as usize > FRAME_ENVELOPE_BYTES_MAX {
        return Err(Damage::FrameOverLimit { len });
    }
    Ok((len, land_seq, check))
}

/// Reads the frame at the reader's position (`offset` names it in errors).
fn read_frame(reader: &mut impl Read, path: &Path, offset: u64) -> Result<FrameRead, SegmentError> {
    let damaged = |damage: Damage| SegmentError::Damaged { path: path.to_path_buf(), offset, damage };
    let io = |source| SegmentError::Io { path: path.to_path_buf(), source };
    let mut head = [0u8; FRAME_HEAD_BYTES];
    match read_full(reader, &mut head).map_err(io)? {
        0 => return Ok(FrameRead::End),
        read if read < FRAME_HEAD_BYTES => return Ok(FrameRead::CutShort),
        _ => {}
    }
    let (len, land_seq, check) = frame_head(&head).map_err(damaged)?;
    let mut rest = vec![0u8; len as usize + check.bytes()];
    if read_full(reader, &mut rest).map_err(io)? < rest.len() {
        return Ok(FrameRead::CutShort);
    }
    let (envelope, check_bytes) = rest.split_at(len as usize);
    if !check.holds(len, land_seq, envelope, check_bytes) {
        return Err(damaged(Damage::CheckFails { land_seq }));
    }
    rest.truncate(len as usize);
    let bytes = (FRAME_HEAD_BYTES + len as usize + check.bytes()) as u64;
    Ok(FrameRead::Whole { land_seq, envelope: rest, bytes, check })
}

/// Reads until `buffer` is full or the input ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// The segment files in `dir`, by the land seq each starts at.
fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>, SegmentError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(SegmentError::Io { path: dir.to_path_buf(), source }),
    };
    let mut segments = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| SegmentError::Io { path: dir.to_path_buf(), source })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(digits) = name.strip_suffix(SEGMENT_SUFFIX).filter(|digits| digits.len() == 20) else { continue };
        if let Ok(first) = digits.parse::<u64>() {
            segments.push((first, entry.path()));
        }
    }
    segments.sort();
    Ok(segments)
}

impl SegmentLog {
    /// Opens the log in `dir` to read it: nothing is created or written,
    /// so a land on a read-only mount or owned by someone else opens.
    pub fn open_read_only(dir: &Path) -> Result<SegmentLog, SegmentError> {
        SegmentLog::open(dir, SEGMENT_BYTES_MAX_DEFAULT, None)
    }

    /// As [`SegmentLog::open_read_only`], trusting that a whole frame of
    /// `known.0` starts at byte `known.1` of its segment (an index said so):
    /// it is read and checked, and only what follows it is scanned. A hint
    /// that does not hold is ignored.
    pub fn open_read_only_after(dir: &Path, known: Option<(u64, u64)>) -> Result<SegmentLog, SegmentError> {
        SegmentLog::open(dir, SEGMENT_BYTES_MAX_DEFAULT, known)
    }

    /// Opens the log in `dir` (created if need be) to append to it, cutting
    /// off a frame a crash left short. Segments roll over at `segment_bytes_max`.
    pub fn open_for_appending(dir: &Path, segment_bytes_max: u64) -> Result<SegmentLog, SegmentError> {
        SegmentLog::open_for_appending_after(dir, segment_bytes_max, None)
    }

    /// As [`SegmentLog::open_for_appending`], with the hint of
    /// [`SegmentLog::open_read_only_after`].
    pub fn open_for_appending_after(
        dir: &Path,
        segment_bytes_max: u64,
        known: Option<(u64, u64)>,
    ) -> Result<SegmentLog, SegmentError> {
        let io = |source| SegmentError::Io { path: dir.to_path_buf(), source };
        fs::create_dir_all(dir).map_err(io)?;
        let mut log = SegmentLog::open(dir, segment_bytes_max, known)?;
        if let Some(last) = log.segments.last() {
            let io = |source| SegmentError::Io { path: last.path.clone(), source };
            let file = fs::OpenOptions::new().append(true).open(&last.path).map_err(io)?;
            if log.torn_tail_bytes > 0 {
                file.set_len(last.len).map_err(io)?;
                file.sync_all().map_err(io)?;
                log.torn_tail_bytes = 0;
            }
            log.writer = Some(file);
        }
        Ok(log)
    }

    /// Lists the segments and reads the last one through to find where the
    /// log ends (every other segment's frames are read when asked for).
    fn open(dir: &Path, segment_bytes_max: u64, known: Option<(u64, u64)>) -> Result<SegmentLog, SegmentError> {
        let listed = list_segments(dir)?;
        let mut segments = Vec::with_capacity(listed.len());
        for (index, (first_land_seq, path)) in listed.iter().enumerate() {
            let metadata = fs::metadata(path).map_err(|source| SegmentError::Io { path: path.clone(), source })?;
            if index > 0 && *first_land_seq <= listed[index - 1].0 {
                let damage = Damage::StartsWherePreviousDid;
                return Err(SegmentError::Damaged { path: path.clone(), offset: 0, damage });
            }
            segments.push(Segment { first_land_seq: *first_land_seq, path: path.clone(), len: metadata.len() });
        }
        let mut log = SegmentLog {
            dir: dir.to_path_buf(),
            segments,
            next_land_seq: 0,
            torn_tail_bytes: 0,
            segment_bytes_max,
            writer: None,
            cut_back_failed: false,
            frames: Vec::new(),
        };
        if let Some(last) = log.segments.last().cloned() {
            let start =
                known.filter(|(land_seq, _)| *land_seq >= last.first_land_seq).and_then(|(land_seq, offset)| {
                    let file = fs::File::open(&last.path).ok()?;
                    match read_frame(&mut PositionedReader { file: &file, position: offset }, &last.path, offset) {
                        Ok(FrameRead::Whole { land_seq: found, bytes, .. }) if found == land_seq => {
                            Some((offset + bytes, land_seq + 1))
                        }
                        _ => None,
                    }
                });
            let (next_land_seq, whole_bytes) = log.scan_segment_from(&last, start, |_, _, _| Ok(()))?;
            log.next_land_seq = next_land_seq;
            log.torn_tail_bytes = last.len - whole_bytes;
            if let Some(last) = log.segments.last_mut() {
                last.len = whole_bytes;
            }
        }
        Ok(log)
    }

    /// Reads every whole frame of `segment` in order, checking the land seqs
    /// run on from its first; returns the land seq after its last frame and
    /// the bytes of its whole frames.
    /// Scans `segment` from `start` (a byte offset and the land seq of the
    /// frame there; its beginning when `None`), giving each frame's land seq,
    /// offset and envelope to `each`.
    fn scan_segment_from(
        &self,
        segment: &Segment,
        start: Option<(u64, u64)>,
        mut each: impl FnMut(u64, u64, Vec<u8>) -> Result<(), SegmentError>,
    ) -> Result<(u64, u64), SegmentError> {
        let path = &segment.path;
        let mut file = fs::File::open(path).map_err(|source| SegmentError::Io { path: path.clone(), source })?;
        let (mut offset, mut expected) = start.unwrap_or((0, segment.first_land_seq));
        file.seek(SeekFrom::Start(offset)).map_err(|source| SegmentError::Io { path: path.clone(), source })?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        loop {
            match read_frame(&mut reader, path, offset)? {
                FrameRead::Whole { land_seq, envelope, bytes, .. } => {
                    if land_seq != expected {
                        let damage = Damage::LandSeqOutOfPlace { found: land_seq, expected };
                        return Err(SegmentError::Damaged { path: path.clone(), offset, damage });
                    }
                    each(land_seq, offset, envelope)?;
                    offset += bytes;
                    expected += 1;
                }
                FrameRead::CutShort | FrameRead::End => return Ok((expected, offset)),
            }
        }
    }

    /// How many facts the log holds (the land seq of the next).
    pub fn len(&self) -> u64 {
        self.next_land_seq
    }

    pub fn is_empty(&self) -> bool {
        self.next_land_seq == 0
    }

    /// Bytes of a frame a crash cut short at the end (0 once appending cut it off).
    pub fn torn_tail_bytes(&self) -> u64 {
        self.torn_tail_bytes
    }

    /// Appends a group of envelopes at land seqs `len()`, `len() + 1`, … and
    /// syncs it: once this returns, every one of them is durable.
    /// Returns the byte offset of each frame in its segment (the group is
    /// never split: every frame is in the last segment).
    pub fn append_group<'e>(
        &mut self,
        envelopes: impl IntoIterator<Item = &'e [u8]>,
    ) -> Result<Vec<u64>, SegmentError> {
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let appended = self.append_frames(envelopes, &mut frames);
        if frames.capacity() <= SEGMENT_FRAMES_BUFFER_BYTES_KEPT_MAX {
            self.frames = frames;
        }
        appended
    }

    /// [`SegmentLog::append_group`], the frames made in `frames` (empty).
    fn append_frames<'e>(
        &mut self,
        envelopes: impl IntoIterator<Item = &'e [u8]>,
        frames: &mut Vec<u8>,
    ) -> Result<Vec<u64>, SegmentError> {
        let mut starts = Vec::new();
        let mut next = self.next_land_seq;
        for envelope in envelopes {
            starts.push(frames.len() as u64);
            write_frame(next, envelope, frames)?;
            next += 1;
        }
        if frames.is_empty() {
            return Ok(starts);
        }
        let rolls = self.segments.last().is_none_or(|last| last.len >= self.segment_bytes_max);
        if rolls {
            self.start_segment()?;
        }
        let last = self.segments.last_mut().expect("a segment was just started");
        for start in &mut starts {
            *start += last.len;
        }
        let io = |source| SegmentError::Io { path: last.path.clone(), source };
        if self.cut_back_failed {
            let damage = Damage::EarlierWriteNotCutBack;
            return Err(SegmentError::Damaged { path: last.path.clone(), offset: last.len, damage });
        }
        let writer = self.writer.as_mut().expect("the last segment is open for appending");
        let written = writer.write_all(frames).and_then(|_| {
            crash_points::reach(CrashPoint::SegmentWritten);
            writer.sync_data()
        });
        if let Err(error) = written {
            // A full disk or a failed sync may leave part of the group in the
            // file: cut it back so the next group follows the last whole one.
            if writer.set_len(last.len).and_then(|_| writer.sync_data()).is_err() {
                self.cut_back_failed = true;
            }
            return Err(io(error));
        }
        last.len += frames.len() as u64;
        self.next_land_seq = next;
        Ok(starts)
    }

    /// Each segment's first land seq and file, in order.
    pub fn segment_files(&self) -> Vec<(u64, PathBuf)> {
        self.segments.iter().map(|segment| (segment.first_land_seq, segment.path.clone())).collect()
    }

    /// The folder of the segments.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts a segment at the next land seq (its name durable before any frame).
    fn start_segment(&mut self) -> Result<(), SegmentError> {
        let path = self.dir.join(format!("{:020}{SEGMENT_SUFFIX}", self.next_land_seq));
        let io = |source| SegmentError::Io { path: path.clone(), source };
        let file = fs::OpenOptions::new().append(true).create_new(true).open(&path).map_err(io)?;
        fs::File::open(&self.dir).and_then(|dir| dir.sync_all()).map_err(io)?;
        self.segments.push(Segment { first_land_seq: self.next_land_seq, path, len: 0 });
        self.writer = Some(file);
        Ok(())
    }

    /// Every fact from land seq `from` on, in order, to `each` (which may stop
    /// the reading with an error of its own).
    pub fn read_from(
        &self,
        from: u64,
        mut each: impl FnMut(u64, Vec<u8>) -> Result<(), SegmentError>,
    ) -> Result<(), SegmentError> {
        self.read_positioned_from(from, |land_seq, _, envelope| each(land_seq, envelope))
    }

    /// As [`SegmentLog::read_from`], with each frame's offset in its segment.
    pub fn read_positioned_from(
        &self,
        from: u64,
        mut each: impl FnMut(u64, u64, Vec<u8>) -> Result<(), SegmentError>,
    ) -> Result<(), SegmentError> {
        if from >= self.next_land_seq {
            // Nothing to read (the open scanned the last segment's tail).
            return Ok(());
        }
        let start = self.segments.partition_point(|segment| segment.first_land_seq <= from).saturating_sub(1);
        for segment in &self.segments[start..] {
            let (end, whole_bytes) = self.scan_segment_from(segment, None, |land_seq, offset, envelope| {
                if land_seq >= from && land_seq < self.next_land_seq {
                    each(land_seq, offset, envelope)?;
                }
                Ok(())
            })?;
            let is_last = std::ptr::eq(segment, self.segments.last().expect("not empty"));
            if !is_last && whole_bytes != segment.len {
                let damage = Damage::EarlierSegmentCutShort;
                return Err(SegmentError::Damaged { path: segment.path.clone(), offset: whole_bytes, damage });
            }
            let next_first = self.segments.iter().find(|next| next.first_land_seq > segment.first_land_seq);
            if let Some(next) = next_first.filter(|next| next.first_land_seq != end) {
                let damage = Damage::GapBeforeNextSegment { end, next_first: next.first_land_seq };
                return Err(SegmentError::Damaged { path: segment.path.clone(), offset: whole_bytes, damage });
            }
        }
        Ok(())
    }
}

/// Reads one frame at `offset` of `path` (for a reader that kept where each
/// fact's frame begins).
pub fn read_frame_at(path: &Path, offset: u64) -> Result<Option<(u64, Vec<u8>)>, SegmentError> {
    let file = fs::File::open(path).map_err(|source| SegmentError::Io { path: path.to_path_buf(), source })?;
    read_frame_in(&file, path, offset)
}

/// Reads one frame at `offset` of an open segment `file` (named `path` in
/// errors) with positioned reads, so that many threads may share the file.
pub fn read_frame_in(file: &fs::File, path: &Path, offset: u64) -> Result<Option<(u64, Vec<u8>)>, SegmentError> {
    match read_frame(&mut PositionedReader { file, position: offset }, path, offset)? {
        FrameRead::Whole { land_seq, envelope, .. } => Ok(Some((land_seq, envelope))),
        FrameRead::CutShort | FrameRead::End => Ok(None),
    }
}

/// Rewrites the frame of `land_seq` at `offset` of `path` in place with
/// `envelope` (of the same length), its check made to match (of the kind
/// the frame had, so that it keeps its length): for tests and repair tools
/// that alter a stored fact on purpose, past every chain rule.
pub fn rewrite_frame_unchecked(path: &Path, offset: u64, land_seq: u64, envelope: &[u8]) -> Result<(), SegmentError> {
    use std::os::unix::fs::FileExt;
    let io = |source| SegmentError::Io { path: path.to_path_buf(), source };
    let file = fs::OpenOptions::new().read(true).write(true).open(path).map_err(io)?;
    let check = match read_frame(&mut PositionedReader { file: &file, position: offset }, path, offset)? {
        FrameRead::Whole { land_seq: found, envelope: old, check, .. }
            if found == land_seq && old.len() == envelope.len() =>
        {
            check
        }
        _ => {
            let damage = Damage::NoSuchFrame { land_seq, len: envelope.len() };
            return Err(SegmentError::Damaged { path: path.to_path_buf(), offset, damage });
        }
    };
    let mut frame = Vec::with_capacity(envelope.len() + FRAME_HEAD_BYTES + FRAME_CHECK_BYTES_MAX);
    write_frame_checked_by(check, land_seq, envelope, &mut frame)?;
    file.write_all_at(&frame, offset).map_err(io)?;
    file.sync_data().map_err(io)
}

/// Reads `count` frames one after another from `offset` of an open segment
/// `file` (named `path` in errors), buffered: each frame's land seq, offset
/// and envelope. Fewer come back if the file ends first.
pub fn read_frames_in(
    file: &fs::File,
    path: &Path,
    offset: u64,
    count: usize,
) -> Result<Vec<(u64, u64, Vec<u8>)>, SegmentError> {
    let mut reader =
        std::io::BufReader::with_capacity(FRAMES_READ_BUFFER_BYTES, PositionedReader { file, position: offset });
    let mut frames = Vec::with_capacity(count);
    let mut at = offset;
    while frames.len() < count {
        match read_frame(&mut reader, path, at)? {
            FrameRead::Whole { land_seq, envelope, bytes, .. } => {
                frames.push((land_seq, at, envelope));
                at += bytes;
            }
            FrameRead::CutShort | FrameRead::End => break,
        }
    }
    Ok(frames)
}

/// One frame of a span read by [`read_frame_span_unverified`]: its land
/// seq, its offset in the segment, and where its envelope lies in the buffer.
pub type FrameInSpan = (u64, u64, std::ops::Range<usize>);

/// Reads the frames one after another from `first_offset` of an open
/// segment `file` (named `path` in errors) up to and including the one at
/// `last_offset`, in two positioned reads appended to `buffer`, with no
/// check computed (magic, length and land seq are checked): for a reader
/// that only plans which facts to read again. Each frame's land seq, offset
/// and envelope's place in `buffer`.
pub fn read_frame_span_unverified(
    file: &fs::File,
    path: &Path,
    first_offset: u64,
    last_offset: u64,
    buffer: &mut Vec<u8>,
) -> Result<Vec<FrameInSpan>, SegmentError> {
    let io = |source| SegmentError::Io { path: path.to_path_buf(), source };
    let damaged = |offset: u64, damage: Damage| SegmentError::Damaged { path: path.to_path_buf(), offset, damage };
    let cut_short = |offset: u64| damaged(offset, Damage::EndsInsideFrame);
    let Some(head_end) = last_offset.checked_sub(first_offset).map(|span| span + FRAME_HEAD_BYTES as u64) else {
        return Err(damaged(last_offset, Damage::BeforeSpan { first_offset }));
    };
    let base = buffer.len();
    // Read into the buffer's tail; it is cut back on every error.
    let read_into = |buffer: &mut Vec<u8>, from: usize, to: usize| -> Result<bool, SegmentError> {
        buffer.resize(base + to, 0);
        let mut reader = PositionedReader { file, position: first_offset + from as u64 };
        Ok(read_full(&mut reader, &mut buffer[base + from..]).map_err(io)? == to - from)
    };
    let span_len = usize::try_from(head_end).map_err(|_| cut_short(last_offset))?;
    let result = (|| {
        if !read_into(buffer, 0, span_len)? {
            return Err(cut_short(first_offset));
        }
        let mut frames = Vec::new();
        let mut at = 0usize;
        loop {
            let offset = first_offset + at as u64;
            let head = buffer[base + at..base + at + FRAME_HEAD_BYTES].try_into().expect("a head's bytes");
            let (len, land_seq, check) = frame_head(head).map_err(|damage| damaged(offset, damage))?;
            let len = len as usize;
            let envelope = at + FRAME_HEAD_BYTES..at + FRAME_HEAD_BYTES + len;
            let frame_end = envelope.end + check.bytes();
            let in_buffer = base + envelope.start..base + envelope.end;
            if offset == last_offset {
                // The span held the last frame's head only: read the rest.
                if !read_into(buffer, span_len, frame_end)? {
                    return Err(cut_short(offset));
                }
                frames.push((land_seq, offset, in_buffer));
                return Ok(frames);
            }
            if frame_end + FRAME_HEAD_BYTES > span_len {
                return Err(damaged(offset, Damage::RunsPastNext { next_offset: last_offset }));
            }
            frames.push((land_seq, offset, in_buffer));
            at = frame_end;
        }
    })();
    if result.is_err() {
        buffer.truncate(base);
    }
    result
}

/// The buffer of [`read_frames_in`]: a few hundred frames a read.
const FRAMES_READ_BUFFER_BYTES: usize = 256 * 1024;

/// Reads a shared file from a position of its own (`pread`), leaving the
/// file's cursor alone.
struct PositionedReader<'f> {
    file: &'f fs::File,
    position: u64,
}

impl Read for PositionedReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let read = self.file.read_at(buffer, self.position)?;
        self.position += read as u64;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(land_seq: u64) -> Vec<u8> {
        format!("envelope {land_seq} {}", "x".repeat((land_seq % 7) as usize * 13)).into_bytes()
    }

    fn all(log: &SegmentLog) -> Vec<(u64, Vec<u8>)> {
        let mut read = Vec::new();
        log.read_from(0, |land_seq, bytes| {
            read.push((land_seq, bytes));
            Ok(())
        })
        .expect("reads");
        read
    }

    /// A first segment in `dir` of one frame per check of `checks`, land
    /// seqs from 0, as a build would have written them (the one before the
    /// CRC wrote every frame checked by BLAKE3).
    fn segment_of_frames(dir: &Path, checks: &[FrameCheck]) -> PathBuf {
        let mut bytes = Vec::new();
        for (land_seq, check) in checks.iter().enumerate() {
            write_frame_checked_by(*check, land_seq as u64, &envelope(land_seq as u64), &mut bytes).expect("frame");
        }
        let path = dir.join(format!("{:020}{SEGMENT_SUFFIX}", 0));
        fs::write(&path, bytes).expect("writes");
        path
    }

    fn written(dir: &Path, groups: &[u64], segment_bytes_max: u64) -> SegmentLog {
        let mut log = SegmentLog::open_for_appending(dir, segment_bytes_max).expect("opens");
        for &size in groups {
            let first = log.len();
            let envelopes: Vec<Vec<u8>> = (first..first + size).map(envelope).collect();
            log.append_group(envelopes.iter().map(Vec::as_slice)).expect("appends");
        }
        log
    }

    #[test]
    fn a_frame_head_names_its_damage_as_a_typed_value() {
        let head = |magic: [u8; 4], len: u32, land_seq: u64| {
            let mut head = [0u8; FRAME_HEAD_BYTES];
            head[..4].copy_from_slice(&magic);
            head[4..8].copy_from_slice(&len.to_le_bytes());
            head[8..16].copy_from_slice(&land_seq.to_le_bytes());
            head
        };
        let over = FRAME_ENVELOPE_BYTES_MAX as u32 + 1;
        let max = FRAME_ENVELOPE_BYTES_MAX as u32;
        let cases = [
            (head(*b"SLF2", 12, 7), Ok((12, 7, FrameCheck::Crc))),
            (head(*b"SLF1", 12, 7), Ok((12, 7, FrameCheck::Blake3))),
            (head(FRAME_MAGIC, max, 0), Ok((max, 0, FrameCheck::Crc))),
            (head(*b"nope", 12, 7), Err(Damage::NoFrameHere)),
            (head(*b"SLF3", 12, 7), Err(Damage::NoFrameHere)),
            (head(*b"SLF0", 12, 7), Err(Damage::NoFrameHere)),
            (head(FRAME_MAGIC, over, 7), Err(Damage::FrameOverLimit { len: over })),
            (head(FRAME_MAGIC_CHECKED_BY_BLAKE3, over, 7), Err(Damage::FrameOverLimit { len: over })),
        ];
        for (bytes, expected) in cases {
            assert_eq!(frame_head(&bytes), expected, "{bytes:?}");
        }
        let damaged =
            SegmentError::Damaged { path: "a.log".into(), offset: 9, damage: Damage::CheckFails { land_seq: 3 } };
        assert_eq!(
            damaged.to_string(),
            "a.log at byte 9: the land log is damaged (the check of land seq 3's frame does not hold)"
        );
    }

    #[test]
    fn a_span_read_unverified_gives_the_frames_a_checked_read_gives_and_names_a_broken_one() {
        let dir = tempfile::tempdir().expect("folder");
        let log = written(dir.path(), &[5, 1, 9], 1 << 20);
        let segment = log.segment_files()[0].1.clone();
        let file = fs::File::open(&segment).expect("opens");
        let mut positioned = Vec::new();
        log.read_positioned_from(0, |land_seq, offset, bytes| {
            positioned.push((land_seq, offset, bytes));
            Ok(())
        })
        .expect("reads");
        for (first, last) in [(0, 0), (0, 14), (3, 9), (14, 14)] {
            let mut buffer = b"kept".to_vec();
            let frames =
                read_frame_span_unverified(&file, &segment, positioned[first].1, positioned[last].1, &mut buffer)
                    .expect("reads");
            let read: Vec<(u64, u64, Vec<u8>)> =
                frames.into_iter().map(|(land_seq, offset, at)| (land_seq, offset, buffer[at].to_vec())).collect();
            assert_eq!(read, positioned[first..=last].to_vec(), "frames {first} to {last}");
            assert_eq!(&buffer[..4], b"kept");
        }
        // A frame whose magic is gone: named, and the buffer left as it was.
        let mut bytes = fs::read(&segment).expect("reads");
        bytes[positioned[4].1 as usize] ^= 0xff;
        fs::write(&segment, &bytes).expect("writes");
        let file = fs::File::open(&segment).expect("opens");
        let mut buffer = b"kept".to_vec();
        let error = read_frame_span_unverified(&file, &segment, positioned[0].1, positioned[9].1, &mut buffer);
        assert!(matches!(&error, Err(SegmentError::Damaged { offset, .. }) if *offset == positioned[4].1), "{error:?}");
        assert_eq!(buffer, b"kept");
    }

    /// A log written before the CRC (every frame checked by BLAKE3) reads
    /// as it is, by every reader, and grows by frames checked by the CRC;
    /// the frames it had stay byte for byte.
    #[test]
    fn frames_checked_by_blake3_read_as_they_are_and_the_log_grows_by_frames_checked_by_crc() {
        let dir = tempfile::tempdir().expect("folder");
        let path = segment_of_frames(dir.path(), &[FrameCheck::Blake3; 5]);
        let before = fs::read(&path).expect("reads");
        let mut log = SegmentLog::open_for_appending(dir.path(), u64::MAX).expect("opens");
        assert_eq!((log.len(), log.torn_tail_bytes()), (5, 0));
        let envelopes: Vec<Vec<u8>> = (5..8).map(envelope).collect();
        log.append_group(envelopes.iter().map(Vec::as_slice)).expect("appends");
        drop(log);
        let after = fs::read(&path).expect("reads");
        assert_eq!(&after[..before.len()], &before[..], "the frames before are kept as they were");
        assert_eq!(&after[before.len()..before.len() + 4], b"SLF2", "an added frame is checked by the CRC");
        let crc_frame = FRAME_HEAD_BYTES + envelope(5).len() + 4;
        assert_eq!(&after[before.len() + crc_frame..before.len() + crc_frame + 4], b"SLF2");

        let log = SegmentLog::open_read_only(dir.path()).expect("opens");
        let expected: Vec<(u64, Vec<u8>)> = (0..8).map(|land_seq| (land_seq, envelope(land_seq))).collect();
        assert_eq!(all(&log), expected);
        let mut positioned = Vec::new();
        log.read_positioned_from(0, |land_seq, offset, bytes| {
            positioned.push((land_seq, offset, bytes));
            Ok(())
        })
        .expect("reads");
        let file = fs::File::open(&path).expect("opens");
        assert_eq!(read_frames_in(&file, &path, 0, 8).expect("reads"), positioned);
        for (land_seq, offset, bytes) in &positioned {
            assert_eq!(read_frame_in(&file, &path, *offset).expect("reads"), Some((*land_seq, bytes.clone())));
        }
        for (first, last) in [(0, 7), (3, 6), (4, 5), (6, 7), (7, 7)] {
            let mut buffer = Vec::new();
            let frames = read_frame_span_unverified(&file, &path, positioned[first].1, positioned[last].1, &mut buffer)
                .expect("reads");
            let read: Vec<(u64, u64, Vec<u8>)> =
                frames.into_iter().map(|(land_seq, offset, at)| (land_seq, offset, buffer[at].to_vec())).collect();
            assert_eq!(read, positioned[first..=last].to_vec(), "frames {first} to {last}");
        }
        // A frame rewritten in place keeps its check's kind, so its length.
        for land_seq in [2, 6] {
            let (_, offset, bytes) = &positioned[land_seq];
            let altered: Vec<u8> = bytes.iter().map(|byte| byte ^ 1).collect();
            rewrite_frame_unchecked(&path, *offset, land_seq as u64, &altered).expect("rewrites");
            assert_eq!(read_frame_in(&file, &path, *offset).expect("reads"), Some((land_seq as u64, altered)));
        }
        assert_eq!(fs::read(&path).expect("reads").len(), after.len());
        assert_eq!(all(&SegmentLog::open_read_only(dir.path()).expect("opens")).len(), 8);
    }

    #[test]
    fn groups_read_back_in_order_across_segments_and_reopened() {
        let dir = tempfile::tempdir().expect("dir");
        // A group is never split: a segment rolls over between groups.
        let log = written(dir.path(), &[1, 5, 30, 2, 64], 100);
        assert_eq!(log.len(), 102);
        assert_eq!(log.segments.iter().map(|segment| segment.first_land_seq).collect::<Vec<_>>(), [0, 6, 36, 38]);
        let expected: Vec<(u64, Vec<u8>)> = (0..102).map(|land_seq| (land_seq, envelope(land_seq))).collect();
        assert_eq!(all(&log), expected);
        drop(log);
        let reopened = SegmentLog::open_read_only(dir.path()).expect("opens");
        assert_eq!((reopened.len(), reopened.torn_tail_bytes()), (102, 0));
        assert_eq!(all(&reopened), expected);
        let mut from_middle = Vec::new();
        reopened
            .read_from(57, |land_seq, _| {
                from_middle.push(land_seq);
                Ok(())
            })
            .expect("reads");
        assert_eq!(from_middle, (57..102).collect::<Vec<_>>());
        // Appending goes on after reopening.
        drop(reopened);
        let more = written(dir.path(), &[3], 100);
        assert_eq!(all(&more).len(), 105);
    }

    /// A crash cuts the last frame at any byte: a read-only open reads every
    /// whole frame before it and writes nothing; an open for appending cuts
    /// it off and the log goes on from there.
    /// (Whichever check closes the frame cut.)
    #[test]
    fn a_frame_cut_short_at_any_byte_leaves_every_whole_frame_and_is_cut_off_before_appending() {
        for check in [FrameCheck::Crc, FrameCheck::Blake3] {
            let dir = tempfile::tempdir().expect("dir");
            let path = segment_of_frames(dir.path(), &[check; 7]);
            let full = fs::read(&path).expect("read");
            let last_frame = FRAME_HEAD_BYTES + envelope(6).len() + check.bytes();
            let before_last = full.len() - last_frame;
            // The frame appended again after the cut is checked by the CRC.
            let mut again = full[..before_last].to_vec();
            write_frame(6, &envelope(6), &mut again).expect("frame");
            for cut in before_last + 1..full.len() {
                fs::write(&path, &full[..cut]).expect("write");
                let read_only = SegmentLog::open_read_only(dir.path()).expect("opens");
                let read = (read_only.len(), read_only.torn_tail_bytes());
                assert_eq!(read, (6, (cut - before_last) as u64), "{check:?}, cut {cut}");
                assert_eq!(all(&read_only).len(), 6);
                assert_eq!(fs::read(&path).expect("read").len(), cut, "a read-only open wrote nothing");
                let mut appending = SegmentLog::open_for_appending(dir.path(), u64::MAX).expect("opens");
                appending.append_group([envelope(6).as_slice()]).expect("appends");
                assert_eq!(fs::read(&path).expect("read"), again, "{check:?}, cut {cut}");
            }
        }
    }

    /// Every flipped byte of a small log is named as damage with its file
    /// and offset, or (inside the last frame's head, read as cut short) ends
    /// the log early; never a panic, never a wrong fact.
    /// (In a log of frames checked by the CRC and by BLAKE3, each flipped
    /// at two bits.)
    #[test]
    fn every_flipped_byte_is_named_as_damage_or_ends_the_log_never_a_wrong_fact() {
        let dir = tempfile::tempdir().expect("dir");
        let path = segment_of_frames(dir.path(), &[FrameCheck::Blake3, FrameCheck::Blake3]);
        let mut log = SegmentLog::open_for_appending(dir.path(), u64::MAX).expect("opens");
        let envelopes: Vec<Vec<u8>> = (2..5).map(envelope).collect();
        log.append_group(envelopes.iter().map(Vec::as_slice)).expect("appends");
        let expected = all(&log);
        assert_eq!(expected.len(), 5);
        drop(log);
        let full = fs::read(&path).expect("read");
        for (index, bit) in (0..full.len()).flat_map(|index| [(index, 0x20), (index, 0x01)]) {
            let mut flipped = full.clone();
            flipped[index] ^= bit;
            fs::write(&path, &flipped).expect("write");
            let read = SegmentLog::open_read_only(dir.path()).and_then(|log| {
                let mut read = Vec::new();
                log.read_from(0, |land_seq, bytes| {
                    read.push((land_seq, bytes));
                    Ok(())
                })?;
                Ok(read)
            });
            match read {
                Err(SegmentError::Damaged { path: named, offset, .. }) => {
                    assert_eq!(named, path);
                    assert!(offset <= index as u64, "byte {index} named at {offset}");
                }
                Ok(read) => {
                    assert!(read.len() < expected.len() && expected.starts_with(&read), "byte {index}: {read:?}")
                }
                Err(other) => panic!("byte {index}: {other}"),
            }
        }
    }
}
