//! The land's health breaker (docs/health.md): a score from measurable
//! signs, and the decision to trip the land when it passes 1.0.
//!
//! Each sign is read against its threshold, a configuration key
//! (`crate::config`): its part of the score is `weight × value / threshold`,
//! in thousandths, and the score is the sum of the parts. A score over 1000
//! (1.0) trips the land, and so does free disk below its floor, whatever
//! the score: a full disk must stop the land before a write fails. All of it
//! is whole numbers, so the same signs give the same score everywhere.
//!
//! What this module decides: the score of given signs, and whether they
//! trip the land, with the record of why. What it does not know: how the
//! signs are measured (the engine counts facts, failures and store errors
//! over stored time, asks the hooks for their breakers and the file system
//! for free space), nor what a tripped land refuses (the engine and the
//! portal read [`trip_of`]). The trip and the revival are world facts that
//! set `land_tripped` and `land_revived` in the folded configuration, so
//! replay sees the land tripped exactly where it was.

use crate::world::World;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// The configuration value a trip sets (and a revival clears).
pub const LAND_TRIPPED_CONFIG_KEY: &str = "land_tripped";
/// The configuration value a revival sets: who revived the land, and the trip.
pub const LAND_REVIVED_CONFIG_KEY: &str = "land_revived";
/// The score past which the land trips, in thousandths.
pub const HEALTH_SCORE_TRIPS_OVER_PERMILLE: u64 = 1_000;

/// One measurable sign: its name, the key of its threshold and of its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sign {
    pub name: &'static str,
    pub threshold_key: &'static str,
    pub weight_key: &'static str,
    /// What is counted, for a person.
    pub about: &'static str,
}

/// The signs that make the score, in the order they are shown.
pub const SIGNS: [Sign; 4] = [
    Sign {
        name: "facts_per_minute",
        threshold_key: "health_facts_per_minute_max",
        weight_key: "health_facts_weight_permille",
        about: "facts sealed in the last minute of stored time",
    },
    Sign {
        name: "failures_per_hour",
        threshold_key: "health_failures_per_hour_max",
        weight_key: "health_failures_weight_permille",
        about: "moments refused or failed in the last hour of stored time",
    },
    Sign {
        name: "store_errors_per_hour",
        threshold_key: "health_store_errors_per_hour_max",
        weight_key: "health_store_errors_weight_permille",
        about: "writes the store failed in the last hour of stored time",
    },
    Sign {
        name: "hook_breakers_open",
        threshold_key: "health_hook_breakers_open_max",
        weight_key: "health_hook_breakers_weight_permille",
        about: "hook handlers whose circuit breaker opened since the land was opened or last revived",
    },
];

/// The free-disk sign: not a part of the score but a floor.
pub const DISK_SIGN: &str = "disk_free_bytes";
/// The key of the free-disk floor (0: not watched).
pub const DISK_FREE_BYTES_MIN_KEY: &str = "health_disk_free_bytes_min";

/// The signs measured now, in [`SIGNS`] order, and the free disk (when it
/// could be read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Measured {
    pub values: [u64; 4],
    pub disk_free_bytes: Option<u64>,
}

/// One sign read against its threshold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reading {
    pub sign: String,
    pub value: u64,
    pub threshold: u64,
    pub weight_permille: u64,
    /// `weight × value / threshold`, in thousandths of the score.
    pub part_permille: u64,
}

/// The land's health now: the score, each sign's reading, the free disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub score_permille: u64,
    pub readings: Vec<Reading>,
    pub disk_free_bytes: Option<u64>,
    pub disk_free_bytes_min: u64,
}

/// Why a land tripped: the sign that weighed most (or the disk), the score
/// and every reading, and when (stored time). Kept as `land_tripped`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trip {
    pub sign: String,
    pub score_permille: u64,
    pub readings: Vec<Reading>,
    pub disk_free_bytes: Option<u64>,
    pub disk_free_bytes_min: u64,
    pub at_ms: u64,
}

/// Who revived a land, from which trip, and when (stored time). Kept as
/// `land_revived`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revival {
    pub by: String,
    pub trip: Trip,
    pub at_ms: u64,
}

/// Whether any sign is watched at all: a land whose weights are all 0 and
/// whose disk floor is 0 measures nothing.
pub fn watched(world: &World) -> bool {
    SIGNS.iter().any(|sign| weight_of(world, sign) > 0) || disk_floor(world) > 0
}

fn weight_of(world: &World, sign: &Sign) -> u64 {
    world.config_u64(sign.weight_key, default_of(sign.weight_key))
}

fn threshold_of(world: &World, sign: &Sign) -> u64 {
    world.config_u64(sign.threshold_key, default_of(sign.threshold_key)).max(1)
}

fn disk_floor(world: &World) -> u64 {
    world.config_u64(DISK_FREE_BYTES_MIN_KEY, default_of(DISK_FREE_BYTES_MIN_KEY))
}

fn default_of(key: &str) -> u64 {
    crate::config::key_named(key).map_or(0, |key| key.default)
}

/// The health of `measured` under the thresholds and weights in force in `world`.
pub fn health_of(world: &World, measured: &Measured) -> Health {
    let readings: Vec<Reading> = SIGNS
        .iter()
        .zip(measured.values)
        .map(|(sign, value)| {
            let (threshold, weight_permille) = (threshold_of(world, sign), weight_of(world, sign));
            let part = u128::from(weight_permille) * u128::from(value) / u128::from(threshold);
            Reading {
                sign: sign.name.to_string(),
                value,
                threshold,
                weight_permille,
                part_permille: u64::try_from(part).unwrap_or(u64::MAX),
            }
        })
        .collect();
    let score_permille = readings.iter().fold(0u64, |sum, reading| sum.saturating_add(reading.part_permille));
    Health {
        score_permille,
        readings,
        disk_free_bytes: measured.disk_free_bytes,
        disk_free_bytes_min: disk_floor(world),
    }
}

/// The trip `health` calls for at `at_ms`, if any: free disk under its
/// floor, or a score over 1.0 (named by the sign that weighs most; the
/// first of equals).
pub fn trip_for(health: &Health, at_ms: u64) -> Option<Trip> {
    let disk_low = matches!(health.disk_free_bytes, Some(free) if free < health.disk_free_bytes_min);
    let sign = if disk_low {
        DISK_SIGN.to_string()
    } else if health.score_permille > HEALTH_SCORE_TRIPS_OVER_PERMILLE {
        let heaviest = health.readings.iter().rev().max_by_key(|reading| reading.part_permille)?;
        heaviest.sign.clone()
    } else {
        return None;
    };
    Some(Trip {
        sign,
        score_permille: health.score_permille,
        readings: health.readings.clone(),
        disk_free_bytes: health.disk_free_bytes,
        disk_free_bytes_min: health.disk_free_bytes_min,
        at_ms,
    })
}

/// The trip in force in `world`, if the land is tripped.
pub fn trip_of(world: &World) -> Option<Trip> {
    trip_in(&world.config)
}

/// The trip in force by a land's configuration values, if it is tripped.
pub fn trip_in(config: &BTreeMap<String, Json>) -> Option<Trip> {
    config.get(LAND_TRIPPED_CONFIG_KEY).and_then(|value| serde_json::from_value(value.clone()).ok())
}

/// The latest revival of `world`, if it was ever revived.
pub fn revival_of(world: &World) -> Option<Revival> {
    revival_in(&world.config)
}

/// The latest revival by a land's configuration values, if any.
pub fn revival_in(config: &BTreeMap<String, Json>) -> Option<Revival> {
    config.get(LAND_REVIVED_CONFIG_KEY).and_then(|value| serde_json::from_value(value.clone()).ok())
}

/// The effects of tripping: `land_tripped` set to the trip.
pub fn trip_effects(trip: &Trip) -> Vec<crate::world::Effect> {
    vec![crate::world::Effect::SetConfig { key: LAND_TRIPPED_CONFIG_KEY.into(), value: Some(to_json(trip)) }]
}

/// The effects of reviving a land tripped by `trip`: `land_tripped`
/// cleared, `land_revived` set.
pub fn revival_effects(trip: Trip, by: &str, at_ms: u64) -> Vec<crate::world::Effect> {
    let revival = Revival { by: by.to_string(), trip, at_ms };
    vec![
        crate::world::Effect::SetConfig { key: LAND_TRIPPED_CONFIG_KEY.into(), value: None },
        crate::world::Effect::SetConfig { key: LAND_REVIVED_CONFIG_KEY.into(), value: Some(to_json(&revival)) },
    ]
}

fn to_json(value: &impl Serialize) -> Json {
    // Whole numbers and strings only: serializing cannot fail.
    serde_json::to_value(value).unwrap_or(Json::Null)
}

/// A line for a person: why the land is tripped and what to do.
pub fn trip_line(trip: &Trip) -> String {
    let why = match trip.readings.iter().find(|reading| reading.sign == trip.sign) {
        Some(reading) => format!("{} is {} against a threshold of {}", reading.sign, reading.value, reading.threshold),
        None => format!(
            "free disk is {} bytes, under the floor of {} bytes",
            trip.disk_free_bytes.map_or_else(|| "unknown".to_string(), |free| free.to_string()),
            trip.disk_free_bytes_min
        ),
    };
    format!(
        "the land is tripped by its health breaker ({why}; score {}.{:03}): no moments run and nothing new is \
         sealed until an operator revives it (the portal's /health page, or `seed health revive`)",
        trip.score_permille / 1000,
        trip.score_permille % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn world_with(config: &[(&str, u64)]) -> World {
        let mut world = World::default();
        for (key, value) in config {
            world.config.insert((*key).to_string(), json!(value));
        }
        world
    }

    /// Configuration, measured values, free disk, and the sign that trips (or none).
    type Case<'a> = (&'a [(&'a str, u64)], [u64; 4], Option<u64>, Option<&'a str>);

    /// (config, measured values, free disk) → the sign that trips, or none.
    fn check(config: &[(&str, u64)], values: [u64; 4], disk: Option<u64>, expected: Option<&str>) {
        let world = world_with(config);
        let health = health_of(&world, &Measured { values, disk_free_bytes: disk });
        let trip = trip_for(&health, 9);
        assert_eq!(trip.as_ref().map(|trip| trip.sign.as_str()), expected, "{config:?} {values:?}: {health:?}");
        if let Some(trip) = trip {
            assert_eq!((trip.at_ms, trip.score_permille), (9, health.score_permille));
            assert!(trip_line(&trip).contains("revive"), "{}", trip_line(&trip));
        }
    }

    #[test]
    fn each_sign_trips_the_land_past_its_threshold_and_the_disk_under_its_floor() {
        let floor = [("health_disk_free_bytes_min", 1_000)];
        let cases: &[Case] = &[
            (&[], [0, 0, 0, 0], Some(u64::MAX), None),
            // At the threshold is 1.0, which does not trip; one more does.
            (&[("health_facts_per_minute_max", 10)], [10, 0, 0, 0], None, None),
            (&[("health_facts_per_minute_max", 10)], [11, 0, 0, 0], None, Some("facts_per_minute")),
            (&[("health_failures_per_hour_max", 2)], [0, 3, 0, 0], None, Some("failures_per_hour")),
            (&[("health_store_errors_per_hour_max", 1)], [0, 0, 2, 0], None, Some("store_errors_per_hour")),
            (&[("health_hook_breakers_open_max", 1)], [0, 0, 0, 2], None, Some("hook_breakers_open")),
            // Signs add up: two at 60% of theirs trip together, named by the heavier.
            (
                &[("health_facts_per_minute_max", 10), ("health_failures_per_hour_max", 10)],
                [6, 7, 0, 0],
                None,
                Some("failures_per_hour"),
            ),
            // A weight of 0 takes a sign out of the score.
            (&[("health_failures_per_hour_max", 1), ("health_failures_weight_permille", 0)], [0, 50, 0, 0], None, None),
            // Half the weight: twice the threshold is exactly 1.0, one more trips.
            (
                &[("health_failures_per_hour_max", 10), ("health_failures_weight_permille", 500)],
                [0, 20, 0, 0],
                None,
                None,
            ),
            (
                &[("health_failures_per_hour_max", 10), ("health_failures_weight_permille", 500)],
                [0, 21, 0, 0],
                None,
                Some("failures_per_hour"),
            ),
            (&floor, [0, 0, 0, 0], Some(999), Some("disk_free_bytes")),
            (&floor, [0, 0, 0, 0], Some(1_000), None),
            // Free disk that cannot be read trips nothing.
            (&floor, [0, 0, 0, 0], None, None),
            (&[("health_disk_free_bytes_min", 0)], [0, 0, 0, 0], Some(0), None),
            // Huge values saturate instead of overflowing.
            (&[("health_facts_per_minute_max", 1)], [u64::MAX, u64::MAX, 0, 0], None, Some("facts_per_minute")),
        ];
        for (config, values, disk, expected) in cases {
            check(config, *values, *disk, *expected);
        }
    }

    #[test]
    fn a_trip_is_folded_into_the_world_and_a_revival_clears_it() {
        let mut world = world_with(&[("health_failures_per_hour_max", 1)]);
        let health = health_of(&world, &Measured { values: [0, 5, 0, 0], disk_free_bytes: None });
        let trip = trip_for(&health, 60_000).expect("trips");
        for effect in trip_effects(&trip) {
            world.apply_effect(None, 1, &effect);
        }
        assert_eq!(trip_of(&world), Some(trip.clone()));
        for effect in revival_effects(trip.clone(), "operator", 61_000) {
            world.apply_effect(None, 1, &effect);
        }
        assert_eq!(trip_of(&world), None);
        assert_eq!(revival_of(&world), Some(Revival { by: "operator".into(), trip, at_ms: 61_000 }));
        assert!(watched(&world));
        let quiet = world_with(&[
            ("health_facts_weight_permille", 0),
            ("health_failures_weight_permille", 0),
            ("health_store_errors_weight_permille", 0),
            ("health_hook_breakers_weight_permille", 0),
            ("health_disk_free_bytes_min", 0),
        ]);
        assert!(!watched(&quiet));
    }
}
