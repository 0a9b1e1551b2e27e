//! The `seed` command: parse arguments, dispatch, print one clear error line.

mod cli;

use clap::Parser;
use std::process::ExitCode;

/// The binary chooses the process's allocator (the library only offers it).
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

fn main() -> ExitCode {
    seed::configure_allocator();
    // A closed pipe (`seed reel @x | head`) ends the process quietly, as it
    // does for other command-line tools, instead of panicking in println!.
    // SAFETY: setting a signal disposition to its default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let arguments = cli::Arguments::parse();
    if !arguments.holds_a_world_for_long() {
        seed::turn_transparent_huge_pages_off();
    }
    let json = arguments.wants_json();
    match cli::run(arguments) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            if json {
                // A machine asked: it reads the failure on stdout too.
                cli::print_json_error(&error);
            }
            ExitCode::FAILURE
        }
    }
}
