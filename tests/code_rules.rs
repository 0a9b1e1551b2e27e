//! Rules of the code that the compiler does not hold: checked over the
//! library crates' sources, so a slip fails a test rather than a review.

use std::path::{Path, PathBuf};

fn rust_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Where `text` has a `Result` whose error type is a bare `String`.
fn string_errors(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("Result<") {
            let inside = &rest[at + "Result<".len()..];
            // The top-level comma of the Result's arguments, then its error type.
            let mut depth = 0i32;
            let mut error_type = None;
            for (offset, character) in inside.char_indices() {
                match character {
                    '<' | '(' | '[' => depth += 1,
                    '>' | ')' | ']' if depth == 0 => break,
                    '>' | ')' | ']' => depth -= 1,
                    ',' if depth == 0 => {
                        let tail = &inside[offset + 1..];
                        let end = tail.find('>').unwrap_or(tail.len());
                        error_type = Some(tail[..end].trim());
                        break;
                    }
                    _ => {}
                }
            }
            if error_type == Some("String") {
                lines.push(index + 1);
            }
            rest = inside;
        }
    }
    lines
}

#[test]
fn the_string_error_finder_finds_what_it_should() {
    let cases = [
        ("fn f() -> Result<(u32, u64), String> {", vec![1]),
        ("fn f() -> Result<Json, BTreeMap<String, String>> {", vec![]),
        ("fn f() -> Result<String, Error> {", vec![]),
        ("fn f() -> Result<(), String>", vec![1]),
        ("let x: Result<Vec<(u64, String)>, FrameError> = y;", vec![]),
        ("fn f() -> std::result::Result<(),String>", vec![1]),
    ];
    for (text, expected) in cases {
        assert_eq!(string_errors(text), expected, "{text}");
    }
}

#[test]
fn no_library_function_returns_a_string_as_its_error() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut found = Vec::new();
    for krate in std::fs::read_dir(&crates).expect("crates/") {
        for file in rust_files_under(&krate.expect("a crate").path().join("src")) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for line in string_errors(&text) {
                found.push(format!("{}:{line}", file.strip_prefix(&crates).expect("inside").display()));
            }
        }
    }
    assert!(found.is_empty(), "library functions return typed errors (thiserror enums), not String: {found:#?}");
}

/// Whether the architecture map names `relative` (a path inside a crate's
/// `src/`, or inside the root): the file itself, or a folder holding it.
fn named_in_map(map: &str, relative: &str) -> bool {
    if map.contains(&format!("`{relative}`")) || map.contains(&format!("`{relative}`,")) {
        return true;
    }
    let mut folder = Path::new(relative).parent();
    while let Some(parent) = folder.filter(|parent| !parent.as_os_str().is_empty()) {
        if map.contains(&format!("`{}/`", parent.display())) {
            return true;
        }
        folder = parent.parent();
    }
    false
}

#[test]
fn every_module_has_a_line_in_the_architecture_map_and_every_file_it_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("the map");
    let mut missing = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("crates/") {
        let src = krate.expect("a crate").path().join("src");
        for file in rust_files_under(&src) {
            let relative = file.strip_prefix(&src).expect("inside").display().to_string();
            if relative != "lib.rs" && !named_in_map(&map, &relative) {
                missing.push(file.strip_prefix(root).expect("inside").display().to_string());
            }
        }
    }
    for file in rust_files_under(&root.join("src")) {
        let relative = file.strip_prefix(root).expect("inside").display().to_string();
        if !named_in_map(&map, &relative) {
            missing.push(relative);
        }
    }
    assert!(missing.is_empty(), "modules without a line in docs/ARCHITECTURE.md: {missing:#?}");
    // Every `src/…` path the map names is a file of the root crate.
    let named: Vec<&str> =
        map.split('`').skip(1).step_by(2).filter(|text| text.starts_with("src/") && text.ends_with(".rs")).collect();
    assert!(!named.is_empty(), "the map names the binary's modules");
    let gone: Vec<&&str> = named.iter().filter(|path| !root.join(path).is_file()).collect();
    assert!(gone.is_empty(), "docs/ARCHITECTURE.md names files that do not exist: {gone:?}");
}
