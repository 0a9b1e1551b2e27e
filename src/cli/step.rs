//! `seed replay @name --step`: step through a replay with plain stdin
//! commands (next, back, continue, break, print). Back steps restore the
//! nearest world snapshot and re-run deterministically.

use anyhow::Result;
use seed::replay::breakpoint::Breakpoint;
use seed::replay::{ReplayedMoment, Replayer, Step};
use std::collections::BTreeSet;
use std::io::{BufRead, Write};

const HELP: &str = "\
commands:
  next | n | (empty line)   rebuild the next moment
  back | b [N]              go back one moment (or N)
  continue | c              run to the next breakpoint (or the end)
  break SPEC                stop at: seq N | verb VERB[:ACTION] | kind KIND | when JSON | divergence
  breaks                    list breakpoints;  delete N  removes one
  print [WHAT]              the current moment; WHAT: context | composed | face | act | clauses | divergence | KEY
  help | quit | q";

pub fn run(mut replayer: Replayer<'_>, input: impl BufRead, output: &mut impl Write) -> Result<bool> {
    let mut breakpoints: Vec<Breakpoint> = Vec::new();
    // The index of the moment the session stands at (None: before the first).
    let mut current: Option<usize> = None;
    writeln!(
        output,
        "stepping through @{}: {} moment(s) in range; `help` lists the commands",
        replayer.report().name,
        replayer.moments_in_range()
    )?;
    for problem in &replayer.report().problems {
        writeln!(output, "  PROBLEM {problem}")?;
    }
    prompt(output)?;
    for line in input.lines() {
        let line = line?;
        let (command, rest) = line.trim().split_once(char::is_whitespace).unwrap_or((line.trim(), ""));
        match command {
            "" | "n" | "next" => match replayer.next_moment()? {
                Some(index) => {
                    current = Some(index);
                    show(output, &replayer.report().moments[index])?;
                }
                None => writeln!(output, "end of the reel")?,
            },
            "b" | "back" => {
                let steps: usize = rest.trim().parse().unwrap_or(1);
                match current {
                    Some(index) if index > 0 => {
                        // Going back further than the first moment stops at the first.
                        let target = index.saturating_sub(steps);
                        let same = replayer.back_to(target)?;
                        if !same {
                            writeln!(
                                output,
                                "WARNING: the re-run rebuilt other moments than the first run (nondeterminism)"
                            )?;
                        }
                        // The re-run stops at `target` (earlier only if it ended early).
                        current = replayer.report().moments.len().checked_sub(1);
                        if let Some(index) = current {
                            show(output, &replayer.report().moments[index])?;
                        }
                    }
                    _ => writeln!(output, "at the first moment already")?,
                }
            }
            "c" | "continue" => {
                let watched: BTreeSet<String> = breakpoints
                    .iter()
                    .filter_map(Breakpoint::watched_kind)
                    .filter(|kind| *kind != "act")
                    .map(str::to_string)
                    .collect();
                loop {
                    match replayer.step(&watched)? {
                        Step::Moment(index) => {
                            current = Some(index);
                            let moment = &replayer.report().moments[index];
                            let hits: Vec<String> = breakpoints
                                .iter()
                                .filter(|breakpoint| breakpoint.hits_moment(moment))
                                .map(Breakpoint::describe)
                                .collect();
                            if !hits.is_empty() {
                                writeln!(output, "breakpoint: {}", hits.join(", "))?;
                                show(output, moment)?;
                                break;
                            }
                        }
                        Step::Fact { land_seq, being, seq, kind } => {
                            let name = replayer.world().name_of(&being).unwrap_or_default().to_string();
                            writeln!(
                                output,
                                "breakpoint: kind {kind}: land seq {land_seq}, #{seq} of @{name} ({})",
                                being.short()
                            )?;
                            break;
                        }
                        Step::End => {
                            writeln!(output, "end of the reel")?;
                            break;
                        }
                    }
                }
            }
            "break" | "br" => match Breakpoint::parse(rest) {
                Ok(breakpoint) => {
                    writeln!(output, "breakpoint {}: {}", breakpoints.len() + 1, breakpoint.describe())?;
                    breakpoints.push(breakpoint);
                }
                Err(error) => writeln!(output, "error: {error}")?,
            },
            "breaks" => {
                for (number, breakpoint) in breakpoints.iter().enumerate() {
                    writeln!(output, "breakpoint {}: {}", number + 1, breakpoint.describe())?;
                }
            }
            "delete" => match rest.trim().parse::<usize>() {
                Ok(number) if (1..=breakpoints.len()).contains(&number) => {
                    let removed = breakpoints.remove(number - 1);
                    writeln!(output, "deleted breakpoint {number}: {}", removed.describe())?;
                }
                _ => writeln!(output, "error: delete N, where N is a breakpoint's number (see `breaks`)")?,
            },
            "p" | "print" => match current {
                Some(index) => print(output, &replayer, index, rest.trim())?,
                None => writeln!(output, "no moment yet: `next` rebuilds the first")?,
            },
            "help" | "h" | "?" => writeln!(output, "{HELP}")?,
            "q" | "quit" | "exit" => break,
            other => writeln!(output, "error: unknown command {other:?}; `help` lists the commands")?,
        }
        prompt(output)?;
    }
    Ok(replayer.report().clean())
}

fn prompt(output: &mut impl Write) -> Result<()> {
    write!(output, "(replay) ")?;
    output.flush()?;
    Ok(())
}

/// The moment in short: seq, time, cursor, wake, roles, act.
fn show(output: &mut impl Write, moment: &ReplayedMoment) -> Result<()> {
    Ok(super::replay::write_moment(output, moment, false)?)
}

fn print(output: &mut impl Write, replayer: &Replayer<'_>, index: usize, what: &str) -> Result<()> {
    let moment = &replayer.report().moments[index];
    let pretty = |value: &serde_json::Value| serde_json::to_string_pretty(value).unwrap_or_default();
    match what {
        "" => super::replay::write_moment(output, moment, true)?,
        "context" => writeln!(output, "{}", pretty(&moment.context))?,
        "composed" => writeln!(output, "{}", pretty(&moment.composed))?,
        "face" => writeln!(output, "{}", pretty(&moment.face))?,
        "act" => writeln!(output, "{}", pretty(&serde_json::to_value(&moment.act)?))?,
        "clauses" => {
            for clause in &moment.clauses {
                writeln!(output, "{clause}")?;
            }
        }
        "divergence" => match replayer.report().divergences.iter().find(|divergence| divergence.seq == moment.seq) {
            Some(divergence) => {
                writeln!(output, "{}", divergence.cause.label())?;
                for difference in &divergence.differences {
                    writeln!(
                        output,
                        "  {}: expected {} got {}",
                        difference.field, difference.expected, difference.actual
                    )?;
                }
            }
            None => writeln!(output, "this moment matches its record")?,
        },
        key => match moment.context.get(key) {
            Some(value) => writeln!(output, "{key} = {value}")?,
            None => writeln!(
                output,
                "error: {key:?} is not a key of this moment's open context (print context lists them), \
                 nor one of context, composed, face, act, clauses, divergence"
            )?,
        },
    }
    Ok(())
}
