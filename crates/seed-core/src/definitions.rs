//! The definition files a world is loaded from (its fixture, role files,
//! extension manifests and scripts), noted as they are read so a land can
//! keep them as facts, and served back from those facts so replay loads the
//! very files a moment ran with (docs/definitions.md).
//!
//! The loaders (`extensions::load`, `RoleRegistry::load_dirs`, the engine's
//! fixture planning) read through this module's functions rather than
//! `std::fs`. Which files they read is decided deep inside them (a role's
//! script relative to its file, an extension's `provides.roles`), so the
//! source is set around a whole load, for the thread doing it, by
//! [`recording`] (the disk, each answer noted) or [`serving`] (a recorded
//! set, the disk never touched); outside both, the disk is read as before.
//!
//! The loaders form every path by joining onto the fixture's folder, so a
//! path is keyed by what follows that folder, `.` and `..` folded away
//! (`../roles/judge.toml`): the same world read from any folder, named by a
//! relative or an absolute path, records the same set, and no machine's
//! folders reach a fact. A path the fixture names absolutely keeps its
//! absolute key. A set is served back to a load of its fixture's file name
//! from the empty folder, which forms the same keys.

use crate::fact::{blake3_of, Hash32};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// What a load learned about one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DefinitionEntry {
    /// A file read whole: its text's BLAKE3 (the text is kept by digest).
    File { digest: Hash32 },
    /// A file whose existence was asked, never read.
    FileSeen,
    /// A folder listed: the names in it, sorted.
    Folder { names: Vec<String> },
    /// A folder whose existence was asked, never listed.
    FolderSeen,
    /// Nothing there.
    Absent,
}

/// The definitions a world was loaded from: the fixture named, role folders
/// added on top of it, and every path the load asked about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefinitionSet {
    /// The fixture's file name (the other paths are keyed from its folder).
    pub fixture: String,
    /// Role folders added on top of the fixture's (a what-if fork's).
    #[serde(default)]
    pub role_dirs: Vec<String>,
    pub entries: BTreeMap<String, DefinitionEntry>,
}

impl DefinitionSet {
    /// BLAKE3 of the set's canonical bytes: two loads that read the same
    /// files at the same paths have the same digest.
    pub fn digest(&self) -> Hash32 {
        blake3_of(&crate::canonical::to_canonical_bytes(self).expect("a definition set holds no floats"))
    }

    /// The digests of the files' texts, each once.
    pub fn text_digests(&self) -> std::collections::BTreeSet<Hash32> {
        self.entries
            .values()
            .filter_map(|entry| match entry {
                DefinitionEntry::File { digest } => Some(*digest),
                _ => None,
            })
            .collect()
    }

    /// How `other` differs from this set, path by path, in path order.
    pub fn changes_to(&self, other: &DefinitionSet) -> Vec<DefinitionChange> {
        let mut changes = Vec::new();
        if self.fixture != other.fixture {
            changes.push(DefinitionChange { path: other.fixture.clone(), how: ChangeKind::FixtureRenamed });
        }
        let files = |set: &DefinitionSet| -> BTreeMap<String, Hash32> {
            set.entries
                .iter()
                .filter_map(|(path, entry)| match entry {
                    DefinitionEntry::File { digest } => Some((path.clone(), *digest)),
                    _ => None,
                })
                .collect()
        };
        let (before, after) = (files(self), files(other));
        for (path, digest) in &before {
            match after.get(path) {
                None => changes.push(DefinitionChange { path: path.clone(), how: ChangeKind::Removed }),
                Some(now) if now != digest => {
                    changes.push(DefinitionChange { path: path.clone(), how: ChangeKind::Changed })
                }
                Some(_) => {}
            }
        }
        for path in after.keys().filter(|path| !before.contains_key(*path)) {
            changes.push(DefinitionChange { path: path.clone(), how: ChangeKind::Added });
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        changes
    }
}

/// One file that differs between two definition sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefinitionChange {
    pub path: String,
    pub how: ChangeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
    FixtureRenamed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
            ChangeKind::FixtureRenamed => "fixture named differently",
        }
    }
}

/// What a land recorded of its definitions, folded from its `definition-text`
/// and `definitions` effects: where each text was kept, and the set in force.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedDefinitions {
    /// The land seq of the fact that keeps each text, by the text's BLAKE3.
    pub texts: BTreeMap<Hash32, u64>,
    /// The set in force, from the fact that recorded it.
    pub in_force: Option<DefinitionsInForce>,
}

/// The definition set in force and the fact that recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefinitionsInForce {
    pub digest: Hash32,
    pub land_seq: u64,
}

impl RecordedDefinitions {
    /// Whether the land ever recorded definitions (older lands did not).
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty() && self.in_force.is_none()
    }

    pub fn fold_text(&mut self, land_seq: u64, digest: Hash32) {
        self.texts.entry(digest).or_insert(land_seq);
    }

    pub fn fold_set(&mut self, land_seq: u64, set: &DefinitionSet) {
        self.in_force = Some(DefinitionsInForce { digest: set.digest(), land_seq });
    }
}

/// A set with the texts of its files: what a load read, or what replay
/// serves back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefinitionFiles {
    pub set: DefinitionSet,
    /// Each file's text by its BLAKE3.
    pub texts: BTreeMap<Hash32, String>,
}

impl DefinitionFiles {
    /// Where a load of this set finds its fixture: its file name alone.
    pub fn fixture_path(&self) -> PathBuf {
        PathBuf::from(&self.set.fixture)
    }

    /// Notes the file `key` (relative to the fixture's folder) as read with
    /// `text` (the fixture, which its own loader reads before any world check).
    pub fn add_file(&mut self, key: &str, text: &str) {
        let digest = blake3_of(text.as_bytes());
        self.texts.insert(digest, text.to_string());
        self.set.entries.insert(key.to_string(), DefinitionEntry::File { digest });
    }
}

enum Source {
    /// Reading the disk (or, inside [`serving`], the served set), noting
    /// each answer under its path relative to `base`.
    Recording { base: PathBuf, files: DefinitionFiles, served: Option<Served> },
    /// Answering from the served set (the fixture loaded from the empty folder).
    Serving(Served),
}

/// A recorded set served back, and the folders still read from the disk
/// beside it (a what-if fork's own role folders).
#[derive(Clone)]
struct Served {
    files: DefinitionFiles,
    disk_folders: Vec<PathBuf>,
}

thread_local! {
    static SOURCE: RefCell<Option<Source>> = const { RefCell::new(None) };
}

/// Runs `load` with every definition read from the disk and noted under
/// its path relative to `base` (the fixture's folder); returns what it
/// returned and what it read. Loads nest by replacing: the inner one's
/// reads are its own. Inside [`serving`], the reads are answered from the
/// served set (and noted as read), never the disk: a land planted from a
/// recorded set records the same set.
pub fn recording<T>(base: &Path, load: impl FnOnce() -> T) -> (T, DefinitionFiles) {
    let served = SOURCE.with(|cell| match &*cell.borrow() {
        Some(Source::Serving(served)) | Some(Source::Recording { served: Some(served), .. }) => Some(served.clone()),
        _ => None,
    });
    let source = Source::Recording { base: base.to_path_buf(), files: DefinitionFiles::default(), served };
    let outer = SOURCE.with(|cell| cell.replace(Some(source)));
    let result = load();
    let recorded = SOURCE.with(|cell| cell.replace(outer));
    match recorded {
        Some(Source::Recording { files, .. }) => (result, files),
        _ => unreachable!("the recording source is put back only by its own scope"),
    }
}

/// Runs `load` with every definition served from `files`: a path the set
/// does not hold reads as not found, and the disk is never touched. The
/// load names the fixture as [`DefinitionFiles::fixture_path`] does.
pub fn serving<T>(files: &DefinitionFiles, load: impl FnOnce() -> T) -> T {
    serving_beside_folders(files, &[], load)
}

/// [`serving`], except that what lies under `disk_folders` (absolute
/// paths) is read from the disk (and recorded by a recording inside).
pub fn serving_beside_folders<T>(files: &DefinitionFiles, disk_folders: &[PathBuf], load: impl FnOnce() -> T) -> T {
    let served = Served { files: files.clone(), disk_folders: disk_folders.to_vec() };
    let outer = SOURCE.with(|cell| cell.replace(Some(Source::Serving(served))));
    let result = load();
    SOURCE.with(|source| source.replace(outer));
    result
}

/// `path` with `.` dropped and `..` folded into the folder before it,
/// without asking the disk (a leading `..` stays).
fn folded(path: &Path) -> Vec<Component<'_>> {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts
}

/// The key of `path`, formed by joining onto `base` (the fixture's
/// folder): what follows `base`, folded; a path not under it (one the
/// fixture names absolutely) keeps its folded self.
pub fn key_under(path: &Path, base: &Path) -> String {
    let rest = path.strip_prefix(base).unwrap_or(path);
    folded(rest).iter().collect::<PathBuf>().to_string_lossy().into_owned()
}

fn not_recorded(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{} is not among the recorded definitions", path.display()))
}

/// Notes what the disk answered about `path` while recording (a fuller
/// answer replaces a lesser one: a file read after its existence was asked).
fn note(path: &Path, entry: DefinitionEntry, text: Option<&str>) {
    SOURCE.with(|source| {
        if let Some(Source::Recording { base, files, .. }) = &mut *source.borrow_mut() {
            let path = key_under(path, base);
            let lesser = matches!(
                (files.set.entries.get(&path), &entry),
                (Some(DefinitionEntry::File { .. }), DefinitionEntry::FileSeen)
                    | (Some(DefinitionEntry::Folder { .. }), DefinitionEntry::FolderSeen)
            );
            if lesser {
                return;
            }
            if let (Some(text), DefinitionEntry::File { digest }) = (text, &entry) {
                files.texts.insert(*digest, text.to_string());
            }
            files.set.entries.insert(path, entry);
        }
    })
}

/// The served entry for `path`, or `None` when not serving.
fn served<T>(path: &Path, answer: impl FnOnce(Option<&DefinitionEntry>, &DefinitionFiles) -> T) -> Option<T> {
    SOURCE.with(|source| match &*source.borrow() {
        Some(Source::Serving(served)) | Some(Source::Recording { served: Some(served), .. }) => {
            if served.disk_folders.iter().any(|folder| path.starts_with(folder)) {
                return None;
            }
            let files = &served.files;
            Some(answer(files.set.entries.get(&key_under(path, Path::new(""))), files))
        }
        _ => None,
    })
}

/// Notes a served answer as read, as the disk's would be (while recording).
fn note_served<T>(
    path: &Path,
    answer: io::Result<T>,
    entry: impl FnOnce(&T) -> (DefinitionEntry, Option<String>),
) -> io::Result<T> {
    match &answer {
        Ok(value) => {
            let (entry, text) = entry(value);
            note(path, entry, text.as_deref());
        }
        Err(_) => note(path, DefinitionEntry::Absent, None),
    }
    answer
}

/// A definition file's text.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    if let Some(answer) = served(path, |entry, files| match entry {
        Some(DefinitionEntry::File { digest }) => files.texts.get(digest).cloned().ok_or_else(|| not_recorded(path)),
        _ => Err(not_recorded(path)),
    }) {
        return note_served(path, answer, |text| {
            (DefinitionEntry::File { digest: blake3_of(text.as_bytes()) }, Some(text.clone()))
        });
    }
    match std::fs::read_to_string(path) {
        Ok(text) => {
            note(path, DefinitionEntry::File { digest: blake3_of(text.as_bytes()) }, Some(&text));
            Ok(text)
        }
        Err(error) => {
            if error.kind() == io::ErrorKind::NotFound {
                note(path, DefinitionEntry::Absent, None);
            }
            Err(error)
        }
    }
}

/// A definition file's length in bytes (checked against a limit before it
/// is read); served, the length of the recorded text.
pub fn file_len(path: &Path) -> io::Result<u64> {
    if let Some(answer) = served(path, |entry, files| match entry {
        Some(DefinitionEntry::File { digest }) => {
            files.texts.get(digest).map(|text| text.len() as u64).ok_or_else(|| not_recorded(path))
        }
        _ => Err(not_recorded(path)),
    }) {
        return note_served(path, answer, |_| (DefinitionEntry::FileSeen, None));
    }
    match std::fs::metadata(path) {
        Ok(metadata) => {
            note(path, DefinitionEntry::FileSeen, None);
            Ok(metadata.len())
        }
        Err(error) => {
            if error.kind() == io::ErrorKind::NotFound {
                note(path, DefinitionEntry::Absent, None);
            }
            Err(error)
        }
    }
}

/// Whether `path` is a file.
pub fn is_file(path: &Path) -> bool {
    if let Some(answer) =
        served(path, |entry, _| matches!(entry, Some(DefinitionEntry::File { .. } | DefinitionEntry::FileSeen)))
    {
        note(path, if answer { DefinitionEntry::FileSeen } else { DefinitionEntry::Absent }, None);
        return answer;
    }
    let is_file = path.is_file();
    note(path, if is_file { DefinitionEntry::FileSeen } else { DefinitionEntry::Absent }, None);
    is_file
}

/// Whether `path` is a folder.
pub fn is_dir(path: &Path) -> bool {
    if let Some(answer) =
        served(path, |entry, _| matches!(entry, Some(DefinitionEntry::Folder { .. } | DefinitionEntry::FolderSeen)))
    {
        note(path, if answer { DefinitionEntry::FolderSeen } else { DefinitionEntry::Absent }, None);
        return answer;
    }
    let is_dir = path.is_dir();
    note(path, if is_dir { DefinitionEntry::FolderSeen } else { DefinitionEntry::Absent }, None);
    is_dir
}

/// The paths in a folder, sorted by name (never the disk's own order: a
/// load reads its folders the same way on every machine).
pub fn read_dir(path: &Path) -> io::Result<Vec<PathBuf>> {
    if let Some(answer) = served(path, |entry, _| match entry {
        Some(DefinitionEntry::Folder { names }) => Ok(names.clone()),
        _ => Err(not_recorded(path)),
    }) {
        let names = note_served(path, answer, |names| (DefinitionEntry::Folder { names: names.clone() }, None))?;
        return Ok(names.iter().map(|name| path.join(name)).collect());
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    note(path, DefinitionEntry::Folder { names: names.clone() }, None);
    Ok(names.iter().map(|name| path.join(name)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("folder");
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("folders");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    /// What a small load asks: a listing, a file's length and text, an
    /// existence test, a missing file.
    fn load(root: &Path) -> Vec<String> {
        let mut seen = Vec::new();
        for path in read_dir(root).unwrap_or_default() {
            if is_dir(&path) {
                seen.push(format!("folder {}", path.file_name().unwrap().to_string_lossy()));
                continue;
            }
            let length = file_len(&path).map(|length| length.to_string()).unwrap_or_else(|e| e.to_string());
            let text = read_to_string(&path).unwrap_or_else(|error| error.kind().to_string());
            seen.push(format!("{length} {text}"));
        }
        seen.push(format!("missing: {}", read_to_string(&root.join("missing.toml")).is_err()));
        seen.push(format!("manifest: {}", is_file(&root.join("b/extension.toml"))));
        seen
    }

    #[test]
    fn a_recorded_load_served_back_reads_the_same_without_the_disk() {
        let dir = folder_with(&[("a.toml", "name = 'a'"), ("b/extension.toml", "x"), ("c.rhai", "42")]);
        let (read, files) = recording(dir.path(), || load(dir.path()));
        assert_eq!(read, ["10 name = 'a'", "folder b", "2 42", "missing: true", "manifest: true"]);
        let keys: Vec<&str> = files.set.entries.keys().map(String::as_str).collect();
        assert_eq!(keys, ["", "a.toml", "b", "b/extension.toml", "c.rhai", "missing.toml"]);
        let root = dir.path().to_path_buf();
        drop(dir);
        assert_eq!(serving(&files, || load(Path::new(""))), read, "the folder is gone; the recording answers alike");
        assert_eq!(files.texts.len(), 2, "the texts read, each once");
        // Outside a scope the disk is read again (the folder is gone).
        assert!(read_to_string(&root.join("a.toml")).is_err());
    }

    /// A recording inside a served scope (a land planted again from the set
    /// another land recorded) answers from the set, never the disk, and
    /// records the same set.
    #[test]
    fn a_recording_inside_a_served_scope_records_the_served_set() {
        let dir = folder_with(&[("a.toml", "name = 'a'"), ("b/extension.toml", "x"), ("c.rhai", "42")]);
        let (read, files) = recording(dir.path(), || load(dir.path()));
        drop(dir);
        let (again, recorded) = serving(&files, || recording(Path::new(""), || load(Path::new(""))));
        assert_eq!(again, read, "served, not read from the (gone) folder");
        assert_eq!(recorded, files, "the same set, with the same texts");
    }

    #[test]
    fn keys_follow_the_fixtures_folder_with_dots_folded() {
        let check = |path: &str, base: &str, expected: &str| {
            assert_eq!(key_under(Path::new(path), Path::new(base)), expected, "{path} under {base}");
        };
        check("/w/fixtures/../roles/a.toml", "/w/fixtures", "../roles/a.toml");
        check("/w/fixtures/roles/./a.toml", "/w/fixtures", "roles/a.toml");
        check("fixtures/../extensions", "fixtures", "../extensions");
        check("../extensions/x", "", "../extensions/x");
        check("../f/../roles", "../f", "../roles");
        check("fixtures/sub/../x", "fixtures", "x");
        check("roles", "", "roles");
        check("/abs/roles", "fixtures", "/abs/roles");
        check("/abs/roles", "", "/abs/roles");
        check("/w/roles", "/w/fixtures", "/w/roles");
        check("fixtures2/x", "fixtures", "fixtures2/x");
    }

    #[test]
    fn a_path_the_recording_never_saw_is_not_found_when_served() {
        let files = DefinitionFiles::default();
        let error = serving(&files, || read_to_string(Path::new("/etc/hostname"))).expect_err("not recorded");
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert!(error.to_string().contains("not among the recorded definitions"), "{error}");
    }

    #[test]
    fn the_digest_follows_contents_and_paths_and_changes_are_named() {
        let check = |edit: &dyn Fn(&mut DefinitionFiles), expected: &[(&str, ChangeKind)]| {
            let mut before = DefinitionFiles::default();
            before.set.fixture = "w.toml".into();
            before.add_file("w.toml", "name = 'w'");
            before.add_file("roles/a.toml", "a");
            before.add_file("roles/b.toml", "b");
            let mut after = before.clone();
            edit(&mut after);
            let changes = before.set.changes_to(&after.set);
            let named: Vec<(&str, ChangeKind)> = changes.iter().map(|c| (c.path.as_str(), c.how)).collect();
            assert_eq!(named, expected);
            assert_eq!(before.set.digest() == after.set.digest(), expected.is_empty());
        };
        check(&|_| {}, &[]);
        check(&|files| files.add_file("roles/a.toml", "a2"), &[("roles/a.toml", ChangeKind::Changed)]);
        check(&|files| files.add_file("roles/c.toml", "c"), &[("roles/c.toml", ChangeKind::Added)]);
        check(
            &|files| {
                files.set.entries.remove("roles/b.toml");
            },
            &[("roles/b.toml", ChangeKind::Removed)],
        );
    }
}
