//! See-resolvers (focused, structured views a role pre-renders into the face
//! every moment) and the world view relationship tokens expand against.
//! Both are pure functions of the world at the moment's cursor.

use super::ops::{ArgSchema, ArgType, OpCall, OpHandler, OpRegistry, OpSpec};
use super::refusal::{GridError, OpError, SeeError};
use crate::roles::resolve::WorldView;
use crate::world::{BeingRow, Effect, World};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::Arc;

pub type BuiltinSeeResolver = fn(&World, &BeingRow) -> Result<Json, SeeError>;

/// A see-resolver: built into the core, or Rhai shipped by an extension.
#[derive(Clone)]
pub enum SeeResolver {
    Builtin(BuiltinSeeResolver),
    /// Gets `me` (name, space, qualities), `space` (path, kind, qualities),
    /// `beings` (the others in the same space: name, qualities), `matter`
    /// (address → kind and fields, in the same space) and `signals`; returns
    /// the structured view.
    Script(Arc<str>),
}

#[derive(Clone, Default)]
pub struct SeeResolvers {
    resolvers: BTreeMap<String, SeeResolver>,
    /// The extension each resolver an extension registered came from.
    origins: BTreeMap<String, String>,
}

/// What a script see-resolver reads: the being's surroundings, nothing more.
pub fn surroundings(world: &World, me: &BeingRow) -> Json {
    let space = world.spaces.get(&me.location);
    let beings: Vec<Json> = world
        .beings
        .values()
        .filter(|row| row.location == me.location && row.id != me.id && !row.ended)
        .map(|row| json!({ "name": row.name, "qualities": row.qualities }))
        .collect();
    let prefix = format!("{}#", me.location);
    let matter: serde_json::Map<String, Json> = world
        .matter
        .iter()
        .filter(|(address, _)| address.starts_with(&prefix))
        .map(|(address, matter)| (address.clone(), json!({ "kind": matter.kind, "fields": matter.fields })))
        .collect();
    json!({
        "me": { "name": me.name, "space": me.location, "qualities": me.qualities },
        "space": { "path": me.location, "kind": space.map(|s| s.kind.clone()), "qualities": space.map(|s| s.qualities.clone()) },
        "beings": beings,
        "matter": matter,
        "signals": world.signals,
    })
}

impl SeeResolvers {
    /// The core's resolvers: `neighbours` (the grid view).
    pub fn core() -> SeeResolvers {
        let mut resolvers = SeeResolvers::default();
        resolvers.register("neighbours", SeeResolver::Builtin(grid_neighbours));
        resolvers
    }

    /// The registered resolvers' names, in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.resolvers.keys().map(String::as_str)
    }

    pub fn register(&mut self, name: &str, resolver: SeeResolver) {
        self.resolvers.insert(name.to_string(), resolver);
    }

    /// Registers an extension's resolver, remembering whose it is.
    pub fn register_from(&mut self, extension: &str, name: &str, resolver: SeeResolver) {
        self.origins.insert(name.to_string(), extension.to_string());
        self.register(name, resolver);
    }

    /// The extension a resolver came from (`core` for the core's).
    pub fn origin(&self, name: &str) -> &str {
        self.origins.get(name).map_or("core", String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<&SeeResolver> {
        self.resolvers.get(name)
    }

    /// Runs one resolver for `me`.
    pub fn resolve(
        &self,
        name: &str,
        world: &World,
        me: &BeingRow,
        scripts: &crate::script::ScriptEngine,
        seed: u64,
    ) -> Result<Json, SeeError> {
        match self.resolvers.get(name) {
            None => Err(SeeError::NotRegistered { name: name.to_string() }),
            Some(SeeResolver::Builtin(resolver)) => resolver(world, me),
            Some(SeeResolver::Script(source)) => {
                let view = surroundings(world, me);
                let fields = |key: &str| view.get(key).cloned().unwrap_or(Json::Null);
                let (me_view, space, beings, matter, signals) =
                    (fields("me"), fields("space"), fields("beings"), fields("matter"), fields("signals"));
                let inputs: [(&str, &Json); 5] = [
                    ("me", &me_view),
                    ("space", &space),
                    ("beings", &beings),
                    ("matter", &matter),
                    ("signals", &signals),
                ];
                let limits = crate::script::limits_in(world);
                crate::script::within_limits(limits, || scripts.run(source, &inputs, seed)).map_err(SeeError::Script)
            }
        }
    }
}

impl WorldView for World {
    fn parent_of(&self, being: &str) -> Option<String> {
        let row = self.being_named(being)?;
        row.parent.and_then(|parent| self.name_of(&parent).map(str::to_string))
    }
    fn children_of(&self, being: &str) -> Vec<String> {
        let Some(id) = self.names.get(being) else { return Vec::new() };
        self.names
            .iter()
            .filter(|(_, child)| self.beings.get(child).is_some_and(|row| row.parent == Some(*id) && !row.ended))
            .map(|(name, _)| name.clone())
            .collect()
    }
    fn beings_in(&self, space: &str) -> Vec<String> {
        let wanted = format!("/{}", space.trim_matches('/'));
        self.names
            .iter()
            .filter(|(_, id)| self.beings.get(id).is_some_and(|row| row.location == wanted && !row.ended))
            .map(|(name, _)| name.clone())
            .collect()
    }
    fn all_beings(&self) -> Vec<String> {
        self.names
            .iter()
            .filter(|(_, id)| self.beings.get(id).is_some_and(|row| !row.ended))
            .map(|(n, _)| n.clone())
            .collect()
    }
}

// ---- the grid: positions in being qualities, size and walls in space qualities ----

pub const GRID_DIRECTIONS: [(&str, i64, i64); 8] =
    [("N", 0, -1), ("NE", 1, -1), ("E", 1, 0), ("SE", 1, 1), ("S", 0, 1), ("SW", -1, 1), ("W", -1, 0), ("NW", -1, -1)];

fn position(row: &BeingRow) -> Option<(i64, i64)> {
    Some((row.qualities.get("grid.x")?.as_i64()?, row.qualities.get("grid.y")?.as_i64()?))
}

enum Cell {
    Wall,
    Empty,
    Taken(String),
}

struct Grid {
    width: i64,
    height: i64,
    walls: Vec<(i64, i64)>,
    occupants: BTreeMap<(i64, i64), String>,
}

impl Grid {
    fn of(world: &World, space: &str) -> Result<Grid, GridError> {
        let qualities =
            &world.spaces.get(space).ok_or_else(|| GridError::NoSpace { space: space.to_string() })?.qualities;
        let size = |key: &str| qualities.get(key).and_then(Json::as_i64).filter(|n| *n > 0);
        let (Some(width), Some(height)) = (size("grid.w"), size("grid.h")) else {
            return Err(GridError::NotAGrid { space: space.to_string() });
        };
        let walls = match qualities.get("grid.walls") {
            Some(Json::Array(cells)) => {
                cells.iter().filter_map(|cell| Some((cell.get(0)?.as_i64()?, cell.get(1)?.as_i64()?))).collect()
            }
            _ => Vec::new(),
        };
        let mut occupants = BTreeMap::new();
        for row in world.beings.values().filter(|row| row.location == space && !row.ended) {
            if let Some(at) = position(row) {
                occupants.insert(at, row.name.clone());
            }
        }
        Ok(Grid { width, height, walls, occupants })
    }

    fn cell(&self, x: i64, y: i64) -> Cell {
        if x < 0 || y < 0 || x >= self.width || y >= self.height || self.walls.contains(&(x, y)) {
            return Cell::Wall;
        }
        match self.occupants.get(&(x, y)) {
            Some(name) => Cell::Taken(name.clone()),
            None => Cell::Empty,
        }
    }
}

/// Position, grid size, the eight neighbours ("wall", "empty" or "@name"),
/// the wall directions and the legal moves ("STAY" and every empty direction).
fn grid_neighbours(world: &World, me: &BeingRow) -> Result<Json, SeeError> {
    let grid = Grid::of(world, &me.location).map_err(SeeError::Grid)?;
    let (x, y) = position(me).ok_or_else(|| SeeError::NoGridPosition { being: me.name.clone() })?;
    let mut neighbours = serde_json::Map::new();
    let mut walls = Vec::new();
    let mut legal = vec![json!("STAY")];
    for (direction, dx, dy) in GRID_DIRECTIONS {
        let description = match grid.cell(x + dx, y + dy) {
            Cell::Wall => {
                walls.push(json!(direction));
                "wall".to_string()
            }
            Cell::Empty => {
                legal.push(json!(direction));
                "empty".to_string()
            }
            Cell::Taken(name) => format!("@{name}"),
        };
        neighbours.insert(direction.to_string(), json!(description));
    }
    Ok(json!({
        "position": { "x": x, "y": y },
        "grid": { "w": grid.width, "h": grid.height },
        "neighbors": neighbours,
        "walls": walls,
        "legalMoves": legal,
    }))
}

/// `step {dir}`: move one cell on the grid, only to an empty cell.
fn op_step(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let me = call.world.being_named(call.actor).ok_or(OpError::ActorNotInWorld)?;
    let direction = call.args.get("dir").and_then(Json::as_str).unwrap_or_default();
    if direction == "STAY" {
        return Ok(Vec::new());
    }
    let (_, dx, dy) = GRID_DIRECTIONS
        .iter()
        .find(|(name, _, _)| *name == direction)
        .ok_or_else(|| OpError::NotADirection { given: direction.to_string() })?;
    let grid = Grid::of(call.world, &me.location).map_err(OpError::Grid)?;
    let (x, y) = position(me).ok_or(OpError::NoGridPosition)?;
    match grid.cell(x + dx, y + dy) {
        Cell::Empty => Ok(vec![
            Effect::SetBeingQuality { being: me.name.clone(), key: "grid.x".into(), value: Some(json!(x + dx)) },
            Effect::SetBeingQuality { being: me.name.clone(), key: "grid.y".into(), value: Some(json!(y + dy)) },
        ]),
        Cell::Wall => Err(OpError::IntoAWall { direction: direction.to_string() }),
        Cell::Taken(occupant) => Err(OpError::CellTaken { direction: direction.to_string(), occupant }),
    }
}

/// Registers the grid's DO operation.
pub fn register_grid_ops(ops: &mut OpRegistry) {
    ops.register(OpSpec {
        name: "step".into(),
        schema: ArgSchema::default().field("dir", ArgType::Text, true),
        handler: OpHandler::Builtin(op_step),
        origin: "core".into(),
        described: None,
    });
}
