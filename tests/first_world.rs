//! docs/first-world.md runs as written: each block marked `file=PATH` is
//! written to a fresh folder, and each `$ ` line of a `sh` block is run there
//! in document order with `seed` on the PATH. It must exit as the block
//! says (`sh exit=N`, else 0), and print the block's other lines in order
//! (`…` stands for lines left out).

use std::path::Path;
use std::process::Command;

/// One step of the tutorial, in document order.
#[derive(Debug)]
enum Step {
    WriteFile { path: String, text: String },
    Run { command: String, exit: i32, expected: Vec<String> },
}

/// The steps of a tutorial in Markdown (see the module's documentation).
fn steps(markdown: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else { continue };
        let block: Vec<&str> = lines.by_ref().take_while(|line| !line.starts_with("```")).collect();
        let words: Vec<&str> = info.split_whitespace().collect();
        let option = |name: &str| words.iter().find_map(|word| word.strip_prefix(name)?.strip_prefix('='));
        if let Some(path) = option("file") {
            let text = block.iter().map(|line| format!("{line}\n")).collect();
            steps.push(Step::WriteFile { path: path.to_string(), text });
            continue;
        }
        if words.first() != Some(&"sh") {
            continue;
        }
        let exit = option("exit").map_or(0, |code| code.parse().expect("exit=N takes a number"));
        for line in block {
            match line.strip_prefix("$ ") {
                Some(command) => steps.push(Step::Run { command: command.to_string(), exit, expected: Vec::new() }),
                None if line.trim() == "…" => {}
                None => match steps.last_mut() {
                    Some(Step::Run { expected, .. }) => expected.push(line.trim_end().to_string()),
                    _ => panic!("output line {line:?} before any command"),
                },
            }
        }
    }
    steps
}

fn run(folder: &Path, command: &str) -> (i32, String) {
    let binary = Path::new(env!("CARGO_BIN_EXE_seed"));
    let path =
        format!("{}:{}", binary.parent().expect("a folder").display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(folder)
        .env("PATH", path)
        .env_remove("SEED_LAND")
        .output()
        .expect("run bash");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

/// The lines of `expected` appear in `printed`, in that order.
fn missing_line<'a>(printed: &str, expected: &'a [String]) -> Option<&'a str> {
    let mut printed = printed.lines().map(str::trim_end);
    expected.iter().find(|line| !printed.any(|printed| printed == line.as_str())).map(String::as_str)
}

#[test]
fn the_tutorial_runs_as_written() {
    let markdown_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/first-world.md");
    let markdown = std::fs::read_to_string(&markdown_path).expect("docs/first-world.md");
    let steps = steps(&markdown);
    let files = steps.iter().filter(|step| matches!(step, Step::WriteFile { .. })).count();
    let commands = steps.iter().filter(|step| matches!(step, Step::Run { .. })).count();
    assert!(files >= 7 && commands >= 9, "the tutorial was read: {files} files, {commands} commands");
    let folder = tempfile::tempdir().expect("folder");
    for step in &steps {
        match step {
            Step::WriteFile { path, text } => {
                let target = folder.path().join(path);
                std::fs::create_dir_all(target.parent().expect("a folder")).expect("create the folder");
                std::fs::write(&target, text).expect("write the file");
            }
            Step::Run { command, exit, expected } => {
                let (code, printed) = run(folder.path(), command);
                assert_eq!(code, *exit, "`{command}` exits {exit} in docs/first-world.md:\n{printed}");
                if let Some(line) = missing_line(&printed, expected) {
                    panic!("`{command}` printed no line {line:?} (in docs/first-world.md's order):\n{printed}");
                }
            }
        }
    }
}

#[test]
fn the_tutorial_reader_reads_files_commands_and_their_output() {
    let markdown = "text\n```toml file=a/b.toml\nx = 1\n```\n```sh exit=1\n$ seed one\nfirst\n…\nsecond\n$ seed two\n```\n```text\n$ not run\n```\n";
    let steps = steps(markdown);
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert!(matches!(&steps[0], Step::WriteFile { path, text } if path == "a/b.toml" && text == "x = 1\n"));
    assert!(
        matches!(&steps[1], Step::Run { command, exit: 1, expected } if command == "seed one" && expected == &["first", "second"])
    );
    assert!(
        matches!(&steps[2], Step::Run { command, exit: 1, expected } if command == "seed two" && expected.is_empty())
    );
    let expected = ["a".to_string(), "c".to_string()];
    assert_eq!(missing_line("a\nb\nc\n", &expected), None);
    assert_eq!(missing_line("c\nb\na\n", &expected), Some("c"), "the order counts");
}
