//! A land on PostgreSQL (issue 27): the same promises as a land in its
//! folder. Opt-in (`SEED_TEST_POSTGRES=1`, which `.ci/run` sets): the tests
//! start a throwaway cluster from Debian's `postgresql` package.

use crate::common::{self, note, plant_on, spec, Backend};
use crate::opted_in;
use seed::check::{verify_land, SignatureMode};

const MODE: SignatureMode = SignatureMode::Batch { batch_facts: 64 };

pub fn postgres_opted_in() -> bool {
    opted_in("SEED_TEST_POSTGRES", "the PostgreSQL store's tests")
}

#[test]
fn a_land_planted_on_postgres_seals_reopens_and_verifies_clean() {
    if !postgres_opted_in() {
        return;
    }
    let test = plant_on(Backend::Postgres);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..20 {
        note(&test.land, &worker, &format!("note {index}"));
    }
    let len = test.land.store().land_len().expect("len");
    assert_eq!(len, 4 + 1 + 1 + 20, "four planted beings' geneses, the operator token, the worker");
    let path = test.path();
    test.land.close().expect("close");
    let land = seed::land::Land::open_read_only(&path).expect("reopen");
    assert_eq!(land.store().land_len().expect("len"), len);
    let report = verify_land(land.store(), MODE, 2, common::core_rules()).expect("verify");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(land.store().reel(&worker, 0, 100).expect("reel").len(), 21);
}
