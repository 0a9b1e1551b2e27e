//! Server-rendered pages. Every value that reaches the page goes through
//! `esc`; no page has an inline script or style: the one script and the
//! stylesheet are static assets (`assets/`), with no build step or network.

use serde_json::Value as Json;

/// Escapes text for HTML element content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// A being's spend this hour and today, each budget it answers to, and
/// (for an ancestor) a form that raises its budget as a `do set-budget`.
fn spend_section(being: &Json, name: &str, csrf: &str) -> String {
    let spend = field(being, "spend");
    let window = |key: &str| {
        let spent = field(spend, key);
        format!(
            "{} call(s), {} tokens, {} µ$",
            text(field(spent, "calls")),
            text(field(spent, "tokens")),
            text(field(spent, "costMicros"))
        )
    };
    let mut out = format!(
        "<p id=\"spend\">this hour: <span id=\"spend-hour\">{}</span> · today: <span id=\"spend-day\">{}</span></p>",
        esc(&window("thisHour")),
        esc(&window("today"))
    );
    let budgets = list(field(spend, "budgets"));
    if !budgets.is_empty() {
        out.push_str("<table id=\"budgets\"><tr><th>budget</th><th>spent</th><th>limit</th><th></th></tr>");
        for line in budgets {
            let spent = field(line, "isSpent").as_bool() == Some(true);
            out.push_str(&format!(
                "<tr{}><td><code>{}</code></td><td>{}</td><td>{} per {}</td><td>{}</td></tr>",
                if spent { " class=\"error\"" } else { "" },
                esc(&text(field(line, "budget"))),
                esc(&text(field(line, "spent"))),
                esc(&text(field(line, "limit"))),
                esc(&text(field(line, "per"))),
                if spent { "spent: no model calls until the next window" } else { "" }
            ));
        }
        out.push_str("</table>");
    }
    if let Some(raiser) = field(being, "youRaiseBudgetsAs").as_str() {
        // The being's own limit that stops it first, doubled; else a start.
        let own = budgets.iter().find(|line| {
            let path = text(field(line, "budget"));
            path.starts_with(&format!("budgets.beings.{name}.")) || path.starts_with("budgets.each_being.")
        });
        let (key, value) = match own {
            Some(line) => (
                text(field(line, "budget")).rsplit('.').next().unwrap_or("tokens_per_hour").to_string(),
                field(line, "limit").as_u64().unwrap_or(0).saturating_mul(2).max(1),
            ),
            None => ("tokens_per_hour".to_string(), 10_000),
        };
        let args = serde_json::json!({"being": format!("@{name}"), key: value}).to_string();
        out.push_str(&format!(
            "<form method=\"post\" action=\"/beings/{}/act\" id=\"raise-budget\">{}\
<input type=\"hidden\" name=\"verb\" value=\"do\"><input type=\"hidden\" name=\"action\" value=\"set-budget\">\
<input type=\"hidden\" name=\"target\" value=\"/\">\
<label>@{}’s budget, set as @{} (<code>do set-budget</code>; null removes a limit) \
<input name=\"args\" value=\"{}\" size=\"48\"></label> <button>Set budget</button></form>",
            esc(raiser),
            hidden_csrf(csrf),
            esc(name),
            esc(raiser),
            esc(&args)
        ));
    }
    out
}

/// A JSON value as readable text (strings without their quotes).
pub(super) fn text(value: &Json) -> String {
    match value {
        Json::String(text) => text.clone(),
        Json::Null => "—".to_string(),
        other => other.to_string(),
    }
}

pub(super) fn field<'a>(value: &'a Json, key: &str) -> &'a Json {
    value.get(key).unwrap_or(&Json::Null)
}

pub(super) fn list(value: &Json) -> &[Json] {
    value.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// The stylesheet's fixed part; `stylesheet` adds the classes that stand
/// for values (a space's depth, a role's colour), since the Content-Security-
/// Policy admits no inline style.
const STYLE: &str = ":root{color-scheme:light dark;--fg:#222;--bg:#fff;--muted:#6a6a6a;--line:#ccc;--code:#f5f5f5;\
--error:#a00;--ok:#070;--link:#0645ad;--out:#58a;--in:#a85;--see:#8a8a8a;--do:#1d1d1d;--summon:#1f6fd1;--be:#8e44ad;\
--born:#2e8b57;--ended:#c0392b;--other:#b8b8b8;--signal:#e67e22}\
@media (prefers-color-scheme:dark){:root{--fg:#e4e4e4;--bg:#16181b;--muted:#9a9a9a;--line:#444;--code:#23262b;\
--error:#ff7a7a;--ok:#7ad67a;--link:#8ab4f8;--out:#6fa0d8;--in:#d0a070;--do:#f2f2f2;--summon:#5aa2ff;--be:#c07ae0;\
--other:#666}}\
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:70em;color:var(--fg);background:var(--bg);line-height:1.4}\
a{color:var(--link)}nav a{margin-right:1em}\
table{border-collapse:collapse;display:block;max-width:100%;overflow-x:auto}\
td,th{border:1px solid var(--line);padding:.2em .5em;text-align:left;vertical-align:top}\
.error{color:var(--error)}.warning{color:var(--signal)}.ok{color:var(--ok)}.muted{color:var(--muted)}\
abbr.help{text-decoration:underline dotted;cursor:help}\
.conversation{list-style:none;padding:0}.message{border-left:3px solid var(--line);margin:.4em 0;padding:.2em .6em}\
.message.out{border-color:var(--out)}.message.in{border-color:var(--in)}.said{margin:.2em 0}.reply{margin:.2em 0 .2em 1em}\
pre{background:var(--code);padding:.5em;overflow:auto;max-height:20em}code{background:var(--code)}\
.tl{display:flex;gap:2px;flex-wrap:wrap}.tl span{display:inline-block;min-width:1.2em;height:1.6em;\
font-size:.7em;text-align:center;color:#fff;border-radius:2px}.diverged{outline:3px solid #d00}\
.timeline{margin:.5em 0}.lane-row{display:grid;grid-template-columns:13em 1fr;gap:.5em;align-items:center;\
border-bottom:1px solid var(--line)}.lane-label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:.9em}\
svg.lane{width:100%;height:28px;display:block}.band{opacity:.6}.ticks{display:flex;justify-content:space-between;font-size:.75em}\
.tick{text-align:center}.v-see{fill:var(--see);background:var(--see)}.v-do{fill:var(--do);background:var(--do)}\
.v-summon{fill:var(--summon);background:var(--summon)}.v-be{fill:var(--be);background:var(--be)}\
.born{fill:var(--born);background:var(--born)}.ended{fill:var(--ended);background:var(--ended)}\
.other{fill:var(--other);background:var(--other)}.sig-set,.sig-wake{fill:var(--signal);background:var(--signal)}\
a.mark-link:hover rect,a.mark-link:focus rect{stroke:var(--link);stroke-width:3}\
.swatch{display:inline-block;width:.9em;height:.9em;border-radius:2px;vertical-align:middle;margin-right:.25em}\
.key{margin-right:.8em;white-space:nowrap}.filters label{display:inline-block;margin-right:.6em}.controls a{white-space:nowrap}\
ul.keys{margin:.1em 0 .4em;font-size:.9em}pre.prose{white-space:pre-wrap}\
.diff .added{color:var(--ok)}.diff .removed{color:var(--error)}.diff .kept{color:var(--muted)}\
form.inline{display:inline}fieldset{margin:.5em 0}label{display:block;margin:.3em 0}textarea{width:100%}\
input,select,textarea,button{font:inherit;max-width:100%}\
@media (max-width:40em){body{margin:.6em}nav a{display:inline-block;margin:.2em .6em .2em 0}\
.lane-row{grid-template-columns:6em 1fr}.tick:nth-child(even){visibility:hidden}}";

/// The words a newcomer meets on the pages and what each means: shown as a
/// tooltip wherever the word labels something ([`help`]).
pub const GLOSSARY: &[(&str, &str)] = &[
    ("cursor", "How many facts the land held when this was read: a position in the land's one order of facts."),
    ("wake", "Why a being's moment happened: a summon in its inbox, a signal its roleFlow reads, a tick, a self-continue, or a person acting for it."),
    ("face", "What the being's cognition read in that moment: who and where it is, the time, what woke it, what it may do, what it saw."),
    ("stack", "The roles a being wears at once: the primary role, then the modifiers its roleFlow stacked on it."),
    ("land seq", "A fact's place in the land's one order: every fact of every being gets the next number as it is sealed."),
    ("roleFlow", "A being's clauses, walked every moment: the first matching primary clause picks its role, the stacked ones add modifiers."),
];

/// `word` with its glossary meaning as a tooltip (a programmer error if the
/// word is not in [`GLOSSARY`]).
pub fn help(word: &str) -> String {
    let meaning = GLOSSARY.iter().find(|(term, _)| *term == word).map(|(_, meaning)| *meaning);
    debug_assert!(meaning.is_some(), "{word:?} is in the glossary");
    match meaning {
        Some(meaning) => format!("<abbr class=\"help\" title=\"{}\">{}</abbr>", esc(meaning), esc(word)),
        None => esc(word),
    }
}

/// Deepest space indentation the stylesheet has a class for (a space path
/// has at most 16 segments).
const SPACE_DEPTH_CLASSES: u64 = 16;
/// Role colours: hues this many degrees apart.
const ROLE_HUE_STEP_DEGREES: u16 = 15;

/// The whole stylesheet, served as `/static/portal.css`.
pub fn stylesheet() -> String {
    let mut css = String::from(STYLE);
    for depth in 0..=SPACE_DEPTH_CLASSES {
        let tenths = depth * 15;
        css.push_str(&format!(".depth-{depth}{{margin-left:{}.{}em}}", tenths / 10, tenths % 10));
    }
    for hue in (0..360).step_by(usize::from(ROLE_HUE_STEP_DEGREES)) {
        css.push_str(&format!(".hue-{hue}{{background:hsl({hue},55%,45%);fill:hsl({hue},55%,45%)}}"));
    }
    css
}

/// The page frame. `csrf` (a logged-in page) adds the navigation and the
/// token scripts send back.
/// Whether the land this process serves is tripped by its health breaker:
/// every page then says so under its menu. One land is served per process;
/// the live land sets it whenever it publishes a new world.
static LAND_TRIPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn set_land_tripped(tripped: bool) {
    LAND_TRIPPED.store(tripped, std::sync::atomic::Ordering::Relaxed);
}

pub fn page(title: &str, body: &str, csrf: Option<&str>) -> String {
    let (meta, nav) = match csrf {
        Some(csrf) => (
            format!("<meta name=\"csrf\" content=\"{}\">", esc(csrf)),
            format!(
                "<nav><a href=\"/world\">World</a><a href=\"/beings/birther\">@birther</a><a href=\"/roles\">Roles</a>\
<a href=\"/moments\">Moments</a><a href=\"/timeline\">Timeline</a><a href=\"/approvals\">Approvals</a><a href=\"/audit\">Audit</a><a href=\"/config\">Config</a><a href=\"/peers\">Peers</a><a href=\"/health\">Health</a><a href=\"/accounts\">Accounts</a><form class=\"inline\" method=\"get\" action=\"/search\" role=\"search\">\
<input name=\"q\" id=\"search\" placeholder=\"search names\" aria-label=\"search\"></form> \
<form class=\"inline\" method=\"post\" action=\"/logout\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\"><button id=\"logout\">Log out</button></form></nav>",
                esc(csrf)
            ),
        ),
        None => (String::new(), String::new()),
    };
    let nav = if LAND_TRIPPED.load(std::sync::atomic::Ordering::Relaxed) && !nav.is_empty() {
        format!(
            "{nav}<p class=\"error\" id=\"tripped-banner\" role=\"alert\">The land is tripped by its health \
breaker: pages and reads stay open; no moment runs and nothing new is sealed until an operator revives it on the \
<a href=\"/health\">health page</a>.</p>"
        )
    } else {
        nav
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">{meta}<title>{} · seed</title>\
<link rel=\"stylesheet\" href=\"/static/portal.css\"><script src=\"/static/portal.js\" defer></script></head>\
<body>{nav}<h1>{}</h1>{body}</body></html>",
        esc(title),
        esc(title)
    )
}

/// A query string value, encoded for a URL and escaped for an attribute.
fn linked(route: &str, key: &str, value: &str) -> String {
    esc(&format!("{route}?{}", serde_urlencoded::to_string([(key, value)]).unwrap_or_default()))
}

fn space_link(path: &str) -> String {
    linked("/spaces", "path", path)
}

/// A link to a space's page, the path as its text.
pub(super) fn space_anchor(path: &str) -> String {
    format!("<a href=\"{}\">{}</a>", space_link(path), esc(path))
}

fn matter_link(address: &str) -> String {
    linked("/matter", "address", address)
}

pub(super) fn being_link(name: &str) -> String {
    format!("<a href=\"/beings/{0}\">@{0}</a>", esc(name))
}

/// What a search found, by kind, each a link.
pub fn search_page(found: &Json, csrf: &str) -> String {
    let mut body = format!("<p class=\"muted\">names holding “{}”</p>", esc(&text(field(found, "query"))));
    let section = |title: &str, id: &str, items: Vec<String>| {
        if items.is_empty() {
            format!("<h2>{title}</h2><p class=\"muted\" id=\"{id}-none\">none</p>")
        } else {
            format!(
                "<h2>{title}</h2><ul id=\"{id}\">{}</ul>",
                items.into_iter().map(|item| format!("<li>{item}</li>")).collect::<String>()
            )
        }
    };
    body.push_str(&section(
        "Beings",
        "found-beings",
        list(field(found, "beings"))
            .iter()
            .map(|being| {
                format!(
                    "{} <span class=\"muted\">in {}</span>",
                    being_link(&text(field(being, "name"))),
                    esc(&text(field(being, "space")))
                )
            })
            .collect(),
    ));
    body.push_str(&section(
        "Roles",
        "found-roles",
        list(field(found, "roles"))
            .iter()
            .map(|role| format!("<a href=\"/roles?edit={0}\">{0}</a>", esc(&text(role))))
            .collect(),
    ));
    body.push_str(&section(
        "Spaces",
        "found-spaces",
        list(field(found, "spaces"))
            .iter()
            .map(|path| format!("<a href=\"{}\">{}</a>", space_link(&text(path)), esc(&text(path))))
            .collect(),
    ));
    body.push_str(&section(
        "Matter",
        "found-matter",
        list(field(found, "matter"))
            .iter()
            .map(|item| {
                let address = text(field(item, "address"));
                format!(
                    "<a href=\"{}\">{}</a> <span class=\"muted\">{}</span>",
                    matter_link(&address),
                    esc(&address),
                    esc(&text(field(item, "kind")))
                )
            })
            .collect(),
    ));
    page("Search", &body, Some(csrf))
}

/// One space: above and below it, who is there, what it holds.
pub fn space_page(space: &Json, csrf: &str) -> String {
    let path = text(field(space, "path"));
    let mut body = format!("<p>a <strong>{}</strong> space", esc(&text(field(space, "kind"))));
    if let Some(parent) = field(space, "parent").as_str() {
        body.push_str(&format!(", inside <a id=\"parent-space\" href=\"{}\">{}</a>", space_link(parent), esc(parent)));
    }
    body.push_str("</p>");
    if let Some(qualities) = field(space, "qualities").as_object().filter(|q| !q.is_empty()) {
        body.push_str("<h2>Qualities</h2><table id=\"qualities\">");
        for (key, value) in qualities {
            body.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(&value.to_string())));
        }
        body.push_str("</table>");
    }
    let below = list(field(space, "below"));
    if !below.is_empty() {
        body.push_str("<h2>Spaces inside</h2><ul id=\"below\">");
        for child in below {
            body.push_str(&format!("<li><a href=\"{}\">{}</a></li>", space_link(&text(child)), esc(&text(child))));
        }
        body.push_str("</ul>");
    }
    let beings = list(field(space, "beings"));
    body.push_str(&format!(
        "<h2>Who is here</h2><p class=\"muted\" id=\"here-count\">{}{}</p><ul id=\"here\">",
        match field(space, "beingCount").as_u64().unwrap_or(0) {
            1 => "1 being".to_string(),
            count => format!("{count} beings"),
        },
        if field(space, "beingsAfter").is_string() || field(space, "beingsNext").is_string() {
            format!(", from @{}", esc(&text(field(beings.first().unwrap_or(&Json::Null), "name"))))
        } else {
            String::new()
        }
    ));
    for being in beings {
        let inhabited = field(being, "inhabitedBy");
        body.push_str(&format!(
            "<li>{} <span class=\"muted\">{}{}</span></li>",
            being_link(&text(field(being, "name"))),
            esc(&text(field(being, "cognition"))),
            if inhabited.is_null() { String::new() } else { format!(", inhabited by @{}", esc(&text(inhabited))) }
        ));
    }
    body.push_str("</ul>");
    if let Some(next) = field(space, "beingsNext").as_str() {
        let query = serde_urlencoded::to_string([("path", path.as_str()), ("beingsAfter", next)]).unwrap_or_default();
        body.push_str(&format!("<p><a id=\"here-next\" href=\"/spaces?{}\">the next beings</a></p>", esc(&query)));
    }
    body.push_str(&ownership_section(space, &path, csrf));
    let cascade = field(space, "cascade");
    let arrivals = list(field(cascade, "arrivals"));
    if field(cascade, "marked").as_bool() == Some(true) || !arrivals.is_empty() {
        body.push_str(&format!(
            "<h2>Cascade</h2><p id=\"cascade-marked\">{}</p>",
            if field(cascade, "marked").as_bool() == Some(true) {
                "Marked for cascade: a write here is announced and delivered by the extensions' handlers."
            } else {
                "Not marked for cascade; signals from elsewhere arrive here."
            }
        ));
        if !arrivals.is_empty() {
            body.push_str(
                "<table id=\"arrivals\"><tr><th>signal</th><th>written at</th><th>by</th><th>write</th><th>depth</th><th>land seq</th></tr>",
            );
            for arrival in arrivals {
                let signal = text(field(arrival, "signal"));
                let from = field(arrival, "from");
                body.push_str(&format!(
                    "<tr><td><a href=\"/cascade/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&signal),
                    esc(&signal[..signal.len().min(12)]),
                    space_anchor(&text(field(arrival, "origin"))),
                    if from.is_null() { "—".to_string() } else { being_link(&text(from)) },
                    esc(&text(field(arrival, "write"))),
                    text(field(arrival, "depth")),
                    text(field(arrival, "landSeq")),
                ));
            }
            body.push_str("</table>");
        }
    }
    body.push_str("<h2>Matter</h2>");
    let matter = list(field(space, "matter"));
    if matter.is_empty() {
        body.push_str("<p class=\"muted\" id=\"no-matter\">none</p>");
    } else {
        body.push_str(
            "<table id=\"space-matter\"><tr><th>address</th><th>kind</th><th>made by</th><th>land seq</th></tr>",
        );
        for item in matter {
            let address = text(field(item, "address"));
            let creator = field(item, "creator");
            body.push_str(&format!(
                "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                matter_link(&address),
                esc(&address),
                esc(&text(field(item, "kind"))),
                if creator.is_null() { "—".to_string() } else { being_link(&text(creator)) },
                text(field(item, "madeAtSeq"))
            ));
        }
        body.push_str("</table>");
        let more = field(space, "matterCount").as_u64().unwrap_or(0).saturating_sub(matter.len() as u64);
        if more > 0 {
            body.push_str(&format!(
                "<p class=\"muted\">and {more} more (<code>/api/v1/world</code> pages through all)</p>"
            ));
        }
    }
    page(&path, &body, Some(csrf))
}

/// One piece of matter: its kind, fields, maker, when and where.
/// A space's owner, contributors and extension scopes, and the forms that
/// change them (each an act of the visitor's own being, checked by the verb layer).
fn ownership_section(space: &Json, path: &str, csrf: &str) -> String {
    let ownership = field(space, "ownership");
    let mut out = String::from("<h2>Ownership</h2>");
    if let Some(done) = field(space, "done").as_str() {
        out.push_str(&format!("<p class=\"ok\" id=\"rules-done\">{}</p>", esc(done)));
    }
    let owner = field(ownership, "owner");
    out.push_str(&format!(
        "<p id=\"owner\">{}</p>",
        match (owner.as_str(), field(ownership, "boundary").as_str()) {
            (Some(owner), Some(boundary)) if boundary == path =>
                format!("Owned by {} (named here).", being_link(owner.trim_start_matches('@'))),
            (Some(owner), Some(boundary)) => format!(
                "Owned by {}, as named at {}.",
                being_link(owner.trim_start_matches('@')),
                space_anchor(boundary)
            ),
            _ => "Unowned: any being may write here.".to_string(),
        }
    ));
    let contributors = list(field(ownership, "contributors"));
    if !contributors.is_empty() {
        out.push_str("<p id=\"contributors\">Contributors named here: ");
        let links: Vec<String> =
            contributors.iter().map(|being| being_link(text(being).trim_start_matches('@'))).collect();
        out.push_str(&links.join(", "));
        out.push_str("</p>");
    }
    let scopes = list(field(ownership, "scopes"));
    if !scopes.is_empty() {
        out.push_str("<table id=\"scopes\"><tr><th>extension</th><th>here</th><th>as marked at</th></tr>");
        for scope in scopes {
            out.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&text(field(scope, "extension"))),
                esc(&text(field(scope, "scope"))),
                space_anchor(&text(field(scope, "at")))
            ));
        }
        out.push_str("</table>");
    }
    out.push_str(&format!(
        "<form method=\"post\" action=\"/spaces/rules\" class=\"inline\" id=\"owner-form\">{}\
<input type=\"hidden\" name=\"path\" value=\"{path}\"><select name=\"action\" id=\"owner-action\" aria-label=\"what to do\">\
<option value=\"set-owner\">set the owner</option><option value=\"transfer-ownership\">transfer ownership</option>\
<option value=\"remove-owner\">remove the owner</option><option value=\"add-contributor\">add a contributor</option>\
<option value=\"remove-contributor\">remove a contributor</option></select> \
<input name=\"being\" id=\"owner-being\" placeholder=\"@being\" aria-label=\"being\" size=\"14\"> \
<button id=\"owner-submit\">Do it</button></form> \
<form method=\"post\" action=\"/spaces/rules\" class=\"inline\" id=\"scope-form\">{}\
<input type=\"hidden\" name=\"path\" value=\"{path}\"><input type=\"hidden\" name=\"action\" value=\"scope-extension\">\
<input name=\"extension\" id=\"scope-extension\" placeholder=\"extension\" aria-label=\"extension\" size=\"14\"> \
<select name=\"scope\" id=\"scope-value\" aria-label=\"scope\"><option value=\"blocked\">blocked</option>\
<option value=\"allowed\">allowed</option><option value=\"\">neither</option></select> \
<button id=\"scope-submit\">Scope it</button></form>",
        hidden_csrf(csrf),
        hidden_csrf(csrf),
        path = esc(path),
    ));
    out
}

pub fn matter_page(matter: &Json, csrf: &str) -> String {
    let address = text(field(matter, "address"));
    let space = text(field(matter, "space"));
    let creator = field(matter, "creator");
    let mut body = format!(
        "<p>a <strong id=\"matter-kind\">{}</strong> in <a href=\"{}\">{}</a>, made {}at land seq {}</p><h2>Fields</h2><table id=\"fields\">",
        esc(&text(field(matter, "kind"))),
        space_link(&space),
        esc(&space),
        if creator.is_null() { String::new() } else { format!("by {} ", being_link(&text(creator))) },
        text(field(matter, "madeAtSeq"))
    );
    if let Some(fields) = field(matter, "fields").as_object() {
        for (key, value) in fields {
            let shown = value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string());
            body.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(&shown)));
        }
    }
    body.push_str("</table>");
    page(&address, &body, Some(csrf))
}

pub fn login_page(error: Option<&str>) -> String {
    let error = error.map(|e| format!("<p class=\"error\" id=\"error\">{}</p>", esc(e))).unwrap_or_default();
    page(
        "Log in",
        &format!(
            "{error}<form method=\"post\" action=\"/login\" class=\"login\">\
<p><label>Token (the operator's, or the one your invitation gave you) \
<input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\" size=\"70\"></label></p>\
<p class=\"muted\">or, once you have set one, your account and password:</p>\
<p><label>Account <input id=\"account\" name=\"account\" autocomplete=\"username\"></label> \
<label>Password <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\"></label></p>\
<button id=\"login\">Log in</button></form>"
        ),
        None,
    )
}

pub(super) fn hidden_csrf(csrf: &str) -> String {
    format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">", esc(csrf))
}

/// The live part of the world page (replaced on every server-sent event).
pub fn world_fragment(world: &Json) -> String {
    let mut out = format!(
        "<p class=\"muted\">{} <span id=\"cursor\">{}</span> · {} beings</p>",
        help("cursor"),
        text(field(world, "cursor")),
        text(field(world, "beings"))
    );
    out.push_str("<h2>Spaces</h2><div id=\"spaces\">");
    for space in list(field(world, "spaces")) {
        let depth = field(space, "depth").as_u64().unwrap_or(0).min(SPACE_DEPTH_CLASSES);
        out.push_str(&format!(
            "<div class=\"space depth-{depth}\"><a href=\"{}\"><strong>{}</strong></a> <span class=\"muted\">{}</span><ul>",
            space_link(&text(field(space, "path"))),
            esc(&text(field(space, "path"))),
            esc(&text(field(space, "kind")))
        ));
        for being in list(field(space, "beings")) {
            let name = text(field(being, "name"));
            let role = field(being, "previousRole");
            out.push_str(&format!(
                "<li><a class=\"being\" id=\"being-{0}\" href=\"/beings/{0}\">@{0}</a> <span class=\"muted\">{1}{2}</span> \
<span class=\"role\" id=\"role-{0}\">{3}</span>{4}</li>",
                esc(&name),
                esc(&text(field(being, "effectiveCognition"))),
                if field(being, "effectiveCognition") != field(being, "cognition") { " (inhabited)" } else { "" },
                if role.is_null() { String::new() } else { format!("wore {}", esc(&text(role))) },
                match field(being, "inbox").as_u64() {
                    Some(n) if n > 0 => format!(" <span class=\"muted\">inbox {n}</span>"),
                    _ => String::new(),
                }
            ));
        }
        let more =
            field(space, "beingCount").as_u64().unwrap_or(0).saturating_sub(list(field(space, "beings")).len() as u64);
        if more > 0 {
            out.push_str(&format!(
                "<li class=\"muted\">and {more} more beings: <a href=\"{}\">the space's page</a> lists them all</li>",
                space_link(&text(field(space, "path")))
            ));
        }
        out.push_str("</ul>");
        let matter = list(field(space, "matter"));
        if !matter.is_empty() {
            out.push_str("<ul class=\"matter\">");
            for item in matter {
                let creator = field(item, "creator");
                out.push_str(&format!(
                    "<li class=\"matter-item\" id=\"matter-{0}\"><strong>{1}</strong> <a href=\"{5}\">{0}</a> <span class=\"muted\">{2}made at land seq {3}</span> <code>{4}</code></li>",
                    esc(&text(field(item, "address"))),
                    esc(&text(field(item, "kind"))),
                    if creator.is_null() { String::new() } else { format!("by <a href=\"/beings/{0}\">@{0}</a> · ", esc(&text(creator))) },
                    text(field(item, "madeAtSeq")),
                    esc(&field(item, "fields").to_string()),
                    matter_link(&text(field(item, "address")))
                ));
            }
            let more = field(space, "matterCount").as_u64().unwrap_or(0).saturating_sub(matter.len() as u64);
            if more > 0 {
                out.push_str(&format!(
                    "<li class=\"muted\">and {more} more (<code>/api/v1/world</code> pages through all)</li>"
                ));
            }
            out.push_str("</ul>");
        }
        out.push_str("</div>");
    }
    out.push_str("</div><h2>World signals</h2><table id=\"signals\"><tr><th>key</th><th>value</th></tr>");
    if let Some(signals) = field(world, "signals").as_object() {
        for (key, value) in signals {
            out.push_str(&format!(
                "<tr><td>{}</td><td id=\"signal-{}\">{}</td></tr>",
                esc(key),
                esc(key),
                esc(&value.to_string())
            ));
        }
    }
    out.push_str("</table>");
    out
}

pub fn world_page(world: &Json, csrf: &str) -> String {
    let body = format!(
        "<div id=\"live\" data-live-world>{}</div>\
<h2>Publish a world signal</h2><form method=\"post\" action=\"/signals\">{}\
<label>key <input id=\"signal-key\" name=\"key\" placeholder=\"court.in-session\"></label>\
<label>value (JSON) <input id=\"signal-value\" name=\"value\" placeholder=\"true\"></label>\
<button id=\"publish\">Publish as @operator</button></form>",
        world_fragment(world),
        hidden_csrf(csrf)
    );
    page("World", &body, Some(csrf))
}

fn pick(name: &str, id: &str, options: &[Json], empty: &str) -> String {
    if options.is_empty() {
        return format!("<em class=\"muted\">{}</em>", esc(empty));
    }
    let mut out = format!("<select name=\"{}\" id=\"{}\">", esc(name), esc(id));
    for option in options {
        let value = text(option);
        out.push_str(&format!("<option value=\"{0}\">{0}</option>", esc(&value)));
    }
    out.push_str("</select>");
    out
}

/// The four verbs as forms, each offering exactly the resolved can* entries.
/// A form as it was posted when it was refused: shown again with what was
/// typed and the reason, beside the form it came from.
#[derive(Debug, Clone, Default)]
pub struct Typed {
    /// Which form: `see`, `do`, `summon`, `be` or `birth`.
    pub form: String,
    pub values: std::collections::BTreeMap<String, String>,
    pub error: String,
}

impl Typed {
    /// What was typed in `key` of `form`, else `default`.
    fn value<'a>(typed: Option<&'a Typed>, form: &str, key: &str, default: &'a str) -> &'a str {
        typed.filter(|typed| typed.form == form).and_then(|typed| typed.values.get(key)).map_or(default, String::as_str)
    }

    /// The refusal shown in `form`, if it was the one posted.
    fn error_in(typed: Option<&Typed>, form: &str) -> String {
        match typed.filter(|typed| typed.form == form) {
            Some(typed) => format!("<p class=\"error\" id=\"error-{}\">{}</p>", esc(form), esc(&typed.error)),
            None => String::new(),
        }
    }
}

pub fn act_forms(being: &Json, csrf: &str, action: &str, typed: Option<&Typed>) -> String {
    let can = field(field(being, "now"), "can");
    let inbox = list(field(being, "inbox"));
    let mut wake = String::from("<option value=\"\">(no summon: act on my own)</option>");
    for summon in inbox {
        wake.push_str(&format!(
            "<option value=\"{}\">answer {}: {}</option>",
            esc(&text(field(summon, "summon"))),
            esc(&text(field(summon, "from"))),
            esc(&text(field(summon, "content")))
        ));
    }
    let wake_help = help("wake");
    let form = |verb: &str, inner: String, disabled: bool| {
        format!(
            "<fieldset><legend>{verb}</legend>{}<form method=\"post\" action=\"{}\" id=\"form-{verb}\">{}\
<input type=\"hidden\" name=\"verb\" value=\"{verb}\"><label>{wake_help} <select name=\"wake\">{wake}</select></label>{inner}\
<label>importance <input name=\"importance\" id=\"{verb}-importance\" type=\"number\" min=\"0\" max=\"10\" \
placeholder=\"0–10, optional\" value=\"{}\"></label><button id=\"do-{verb}\"{}>{verb}</button></form></fieldset>",
            Typed::error_in(typed, verb),
            esc(action),
            hidden_csrf(csrf),
            esc(Typed::value(typed, verb, "importance", "")),
            if disabled { " disabled" } else { "" }
        )
    };
    let kept = |verb: &str, key: &str, default: &'static str| esc(Typed::value(typed, verb, key, default));
    let see = list(field(can, "see"));
    let do_ = list(field(can, "do"));
    let summon = list(field(can, "summon"));
    let be = list(field(can, "be"));
    let mut out = String::from("<h2>Act</h2>");
    out.push_str(&form(
        "see",
        format!(
            "<label>address {}</label><label>or type one <input name=\"address_text\" id=\"see-address-text\" value=\"{}\"></label>",
            pick("address", "see-address", see, "canSee is empty"),
            kept("see", "address_text", "")
        ),
        see.is_empty(),
    ));
    out.push_str(&form(
        "do",
        format!(
            "<label>action {}</label><label>target <input name=\"target\" value=\"{}\" id=\"do-target\"></label>\
<label>args (JSON) <input name=\"args\" value=\"{}\" id=\"do-args\"></label><label>content <input name=\"content\" value=\"{}\"></label>",
            pick("action", "do-action", do_, "canDo is empty"),
            kept("do", "target", "/"),
            kept("do", "args", "{}"),
            kept("do", "content", "")
        ),
        do_.is_empty(),
    ));
    out.push_str(&form(
        "summon",
        format!(
            "<label>target {}</label><label>message <textarea name=\"content\" id=\"summon-content\">\n{}</textarea></label>",
            pick("target", "summon-target", summon, "canSummon is empty"),
            kept("summon", "content", "")
        ),
        summon.is_empty(),
    ));
    out.push_str(&form(
        "be",
        format!(
            "<label>operation {}</label><label>payload (JSON) <input name=\"payload\" value=\"{}\" id=\"be-payload\"></label>",
            pick("operation", "be-operation", be, "canBe is empty"),
            kept("be", "payload", "{}")
        ),
        be.is_empty(),
    ));
    out
}

/// A conversation: each summon with the act that answered it in place, and
/// for each one still waiting in this being's inbox, when the session may
/// drive it, a one-field answer posted to `answer_action`.
pub fn conversation_fragment(talk: &Json, answer_action: Option<&str>, csrf: &str) -> String {
    let messages = list(field(talk, "messages"));
    if messages.is_empty() {
        return "<p class=\"muted\" id=\"no-conversation\">No summons to or from this being yet.</p>".to_string();
    }
    let mut out = String::from("<ol class=\"conversation\" id=\"messages\">");
    for message in messages {
        let summon = text(field(message, "summon"));
        let direction = text(field(message, "direction"));
        out.push_str(&format!(
            "<li class=\"message {0}\" id=\"message-{1}\"><span class=\"muted\">{2} → {3} · land seq {4}</span><p class=\"said\">{5}</p>",
            esc(&direction),
            esc(&summon),
            esc(&text(field(message, "from"))),
            esc(&text(field(message, "to"))),
            text(field(message, "landSeq")),
            esc(&text(field(message, "content")))
        ));
        let reply = field(message, "reply");
        if !reply.is_null() {
            out.push_str(&format!(
                "<p class=\"reply\" id=\"reply-{0}\">↳ {1} answered ({2}, land seq {3}): {4}</p>",
                esc(&summon),
                esc(&text(field(reply, "by"))),
                esc(&text(field(reply, "verb"))),
                text(field(reply, "landSeq")),
                esc(&text(field(reply, "content")))
            ));
        } else if field(message, "pending").as_bool() == Some(true) {
            match (answer_action, direction.as_str()) {
                (Some(action), "in") => out.push_str(&format!(
                    "<form method=\"post\" action=\"{0}\" class=\"answer\" id=\"answer-{1}\">{2}\
<input type=\"hidden\" name=\"verb\" value=\"summon\"><input type=\"hidden\" name=\"wake\" value=\"{1}\">\
<input type=\"hidden\" name=\"target\" value=\"{3}\"><label>answer {3} <input name=\"content\" id=\"answer-text-{1}\" required></label>\
<button id=\"answer-send-{1}\">Send</button></form>",
                    esc(action),
                    esc(&summon),
                    hidden_csrf(csrf),
                    esc(&text(field(message, "from")))
                )),
                _ => out.push_str("<p class=\"muted\">waiting for an answer</p>"),
            }
        }
        out.push_str("</li>");
    }
    out.push_str("</ol>");
    out
}

/// The live conversation section: the fragment, fetched again from
/// `/beings/NAME/conversation` on every world event.
fn conversation_section(name: &str, talk: &Json, answer_action: Option<&str>, inhabit: bool, csrf: &str) -> String {
    format!(
        "<h2>Conversation</h2><div id=\"conversation\" data-live-conversation=\"{}\"{}>{}</div>",
        esc(name),
        if inhabit { " data-answer=\"inhabit\"" } else { "" },
        conversation_fragment(talk, answer_action, csrf)
    )
}

pub fn being_page(being: &Json, talk: &Json, csrf: &str, flash: Option<&str>, typed: Option<&Typed>) -> String {
    let name = text(field(being, "name"));
    let mut body = String::new();
    if let Some(flash) = flash {
        body.push_str(&format!("<p class=\"ok\" id=\"flash\">{}</p>", esc(flash)));
    }
    body.push_str("<table id=\"row\">");
    for key in [
        "id",
        "parent",
        "cognition",
        "effectiveCognition",
        "inhabitedBy",
        "location",
        "home",
        "defaultRole",
        "acts",
        "ended",
    ] {
        body.push_str(&format!(
            "<tr><th>{}</th><td id=\"row-{0}\">{}</td></tr>",
            esc(key),
            esc(&text(field(being, key)))
        ));
    }
    let moved_to = field(being, "movedTo");
    if !moved_to.is_null() {
        body.push_str(&format!(
            "<tr><th>moved</th><td id=\"row-moved\">to land <code>{}</code> at {} with its move at seq {}: \
its reel goes on there, and summons for it here are sent there</td></tr>",
            esc(&text(field(moved_to, "land"))),
            esc(&text(field(moved_to, "url"))),
            esc(&text(field(moved_to, "seq")))
        ));
    }
    let moved_from = field(being, "movedFrom");
    if !moved_from.is_null() {
        body.push_str(&format!(
            "<tr><th>moved</th><td id=\"row-moved\">here from land <code>{}</code>: its reel before its \
moved-in is its life there, kept here as it was signed</td></tr>",
            esc(&text(moved_from))
        ));
    }
    if field(being, "private") == &Json::Bool(true) {
        body.push_str(&format!(
            "</table><p class=\"muted\" id=\"private\">@{} is not yours: its inbox, conversation, reel and \
roleFlow are its person's, and only they may act for it or inhabit it.</p>",
            esc(&name)
        ));
        return page(&format!("@{name}"), &body, Some(csrf));
    }
    // The editor is offered only where saving it could succeed.
    let edit = if field(being, "youMayEditFlow") == &Json::Bool(true) {
        format!("<a href=\"/beings/{}/flow\" id=\"edit-flow\">Edit roleFlow</a>", esc(&name))
    } else {
        String::new()
    };
    body.push_str(&format!(
        "<tr><th>roleFlow</th><td><pre id=\"row-roleFlow\">{}</pre>{edit}</td></tr></table>",
        esc(&serde_json::to_string_pretty(field(being, "roleFlow")).unwrap_or_default()),
    ));
    let now = field(being, "now");
    body.push_str("<h2>Now</h2>");
    if let Some(failure) = now.get("failure") {
        body.push_str(&format!("<p class=\"error\" id=\"now-failure\">{}</p>", esc(&text(failure))));
    } else {
        body.push_str(&format!(
            "<p>wears <strong id=\"now-primary\">{}</strong>, {} <span id=\"now-stack\">{}</span></p><ol id=\"clauses\">",
            esc(&text(field(now, "primary"))),
            help("stack"),
            esc(&list(field(now, "stack")).iter().map(text).collect::<Vec<_>>().join(", "))
        ));
        for clause in list(field(now, "clauses")) {
            body.push_str(&format!("<li>{}</li>", esc(&text(clause))));
        }
        body.push_str("</ol>");
    }
    let tokens = field(being, "tokens");
    body.push_str(&format!(
        "<p id=\"tokens\">LLM calls {} · prompt tokens {} · completion tokens {} · cost {} µ$</p>",
        text(field(tokens, "calls")),
        text(field(tokens, "promptTokens")),
        text(field(tokens, "completionTokens")),
        text(field(tokens, "costMicros"))
    ));
    body.push_str(&spend_section(being, &name, csrf));
    body.push_str(&format!(
        "<p><a href=\"/beings/{0}/replay\" id=\"replay\">Replay @{0}</a> · \
<a href=\"/beings/{0}/memory\" id=\"memory\">Memory of @{0}</a></p>",
        esc(&name)
    ));
    if field(being, "youMayInhabit").as_bool() == Some(true) {
        body.push_str(&format!(
            "<form method=\"post\" action=\"/inhabit/{0}\" target=\"_blank\" class=\"inline\">{2}\
<button id=\"inhabit\">Inhabit (new tab)</button></form> \
<span class=\"muted\">tabs holding it: <span id=\"presence\">{1}</span></span>",
            esc(&name),
            text(field(being, "presence")),
            hidden_csrf(csrf)
        ));
    }
    if name == "birther" || field(being, "youAreThis") == &Json::Bool(true) {
        body.push_str(&format!(
            "<h2>Birth a child</h2>{}<form method=\"post\" action=\"/birth\" id=\"birth-form\">{}\
<input type=\"hidden\" name=\"from\" value=\"{}\">\
<label>name <input name=\"name\" id=\"birth-name\" value=\"{}\"></label>\
<label>cognition <select name=\"cognition\" id=\"birth-cognition\">{}</select></label>\
<label>default role <input name=\"defaultRole\" id=\"birth-default-role\" value=\"{}\"></label>\
<label>roleFlow (JSON, optional) <textarea name=\"roleFlow\" id=\"birth-flow\">\n{}</textarea></label>\
<button id=\"birth\">Birth as @{}</button></form>",
            Typed::error_in(typed, "birth"),
            hidden_csrf(csrf),
            esc(&name),
            esc(Typed::value(typed, "birth", "name", "")),
            ["human", "scripted", "llm"]
                .iter()
                .map(|cognition| {
                    let chosen = Typed::value(typed, "birth", "cognition", "human") == *cognition;
                    format!(
                        "<option value=\"{cognition}\"{}>{cognition}</option>",
                        if chosen { " selected" } else { "" }
                    )
                })
                .collect::<String>(),
            esc(Typed::value(typed, "birth", "defaultRole", "human-conversationalist")),
            esc(Typed::value(typed, "birth", "roleFlow", "")),
            // The child's parent is the asker's own being: the operator's on
            // @birther's page (only the operator sees inside it), else this one.
            if name == "birther" { "operator".to_string() } else { esc(&name) }
        ));
    }
    let may_drive = field(being, "youMayDrive").as_bool() == Some(true);
    let answer_action = format!("/beings/{name}/act");
    body.push_str(&conversation_section(&name, talk, may_drive.then_some(answer_action.as_str()), false, csrf));
    body.push_str("<h2>Inbox</h2><ul id=\"inbox\">");
    for summon in list(field(being, "inbox")) {
        body.push_str(&format!(
            "<li>from {} ({}): {}</li>",
            esc(&text(field(summon, "from"))),
            esc(&text(field(summon, "callerRole"))),
            esc(&text(field(summon, "content")))
        ));
    }
    body.push_str("</ul>");
    if field(being, "youMayDrive").as_bool() == Some(true) {
        body.push_str(&act_forms(being, csrf, &format!("/beings/{name}/act"), typed));
    } else {
        body.push_str(&format!("<p class=\"muted\" id=\"why-not\">{}</p>", esc(&text(field(being, "whyNot")))));
    }
    body.push_str(&format!(
        "<h2>Reel</h2><p class=\"muted\">{} facts; the latest first · <a href=\"/timeline?being={}\">on the timeline</a></p>\
<table id=\"reel\"><tr><th>seq</th><th>time</th><th>kind</th><th>role</th><th>what</th></tr>",
        text(field(being, "reelLength")),
        esc(&name)
    ));
    for fact in list(field(being, "reel")) {
        // An act is a moment: its seq opens the moment's page.
        let seq = esc(&text(field(fact, "seq")));
        let seq = if field(fact, "kind") == "act" {
            format!("<a href=\"/beings/{}/moments/{seq}\">{seq}</a>", esc(&name))
        } else {
            seq
        };
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            seq,
            esc(&text(field(fact, "time"))),
            esc(&text(field(fact, "kind"))),
            esc(&text(field(fact, "primary"))),
            esc(&text(field(fact, "summary")))
        ));
    }
    body.push_str("</table>");
    page(&format!("@{name}"), &body, Some(csrf))
}

pub fn inhabit_page(being: &Json, talk: &Json, csrf: &str, flash: Option<&str>, typed: Option<&Typed>) -> String {
    let name = text(field(being, "name"));
    let mut body = format!(
        "<p id=\"presence-state\" data-presence=\"{1}\">connecting…</p>{0}<p>Close this tab to release @{1}.</p>",
        flash.map(|f| format!("<p class=\"ok\" id=\"flash\">{}</p>", esc(f))).unwrap_or_default(),
        esc(&name)
    );
    // The conversation first: what the person came to answer.
    let answer_action = format!("/inhabit/{name}/act");
    body.push_str(&conversation_section(&name, talk, Some(&answer_action), true, csrf));
    body.push_str(&format!(
        "<p>wears <strong id=\"now-primary\">{}</strong></p>",
        esc(&text(field(field(being, "now"), "primary")))
    ));
    body.push_str(&act_forms(being, csrf, &format!("/inhabit/{name}/act"), typed));
    page(&format!("Inhabiting @{name}"), &body, Some(csrf))
}

pub fn roles_page(roles: &Json, csrf: &str, form: &RoleForm) -> String {
    // The form first: its problems are what the person is looking at.
    let mut body = String::from("<h2>Author or edit a role</h2>");
    body.push_str(&role_form(form, csrf));
    body.push_str("<h2>Roles</h2><table id=\"roles\"><tr><th>role</th><th>from</th><th>canSee</th><th>canDo</th><th>canSummon</th><th>canBe</th></tr>");
    for role in list(field(roles, "roles")) {
        let definition = field(role, "definition");
        let entries = |key: &str| list(field(definition, key)).iter().map(text).collect::<Vec<_>>().join(", ");
        let name = text(field(role, "name"));
        let revert = if field(role, "revertible") == &Json::Bool(true) {
            format!(
                " <form class=\"inline\" method=\"post\" action=\"/roles/{0}/revert\">{1}\
<button id=\"revert-{0}\">Revert to its file</button></form>",
                esc(&name),
                hidden_csrf(csrf)
            )
        } else {
            String::new()
        };
        body.push_str(&format!(
            "<tr id=\"role-{0}\"><td><a href=\"/roles?edit={0}\">{0}</a></td><td>{1}{6}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td></tr>",
            esc(&name),
            esc(&text(field(role, "origin"))),
            esc(&entries("canSee")),
            esc(&entries("canDo")),
            esc(&entries("canSummon")),
            esc(&entries("canBe")),
            revert
        ));
    }
    body.push_str("</table>");
    page("Roles", &body, Some(csrf))
}

/// The role form's values and the problems found in them, by field.
#[derive(Debug, Clone, Default)]
pub struct RoleForm {
    pub values: std::collections::BTreeMap<String, String>,
    pub errors: std::collections::BTreeMap<String, String>,
    pub saved: Option<String>,
    /// What each field's picker offers (`views::role_pickers`).
    pub pickers: std::collections::BTreeMap<&'static str, Vec<String>>,
    /// The change the form would make, shown before it is saved.
    pub change: Option<RoleChange>,
}

/// A role's change as the form shows it before saving: the definition's
/// lines, each kept (' '), removed ('-') or added ('+'), and the digest the
/// role will have.
#[derive(Debug, Clone, Default)]
pub struct RoleChange {
    pub lines: Vec<(char, String)>,
    pub digest: String,
    /// Whether the role exists already (else the whole definition is new).
    pub replaces: bool,
}

fn role_form(form: &RoleForm, csrf: &str) -> String {
    let mut out = String::new();
    if let Some(saved) = &form.saved {
        out.push_str(&format!("<p class=\"ok\" id=\"flash\">{}</p>", esc(saved)));
    }
    if let Some(general) = form.errors.get("") {
        out.push_str(&format!("<p class=\"error\" id=\"error\">{}</p>", esc(general)));
    }
    if let Some(change) = &form.change {
        let changed = change.lines.iter().any(|(mark, _)| *mark != ' ');
        out.push_str(&format!(
            "<div id=\"role-change\"><h3>The change{}</h3><p>Saved, the role's digest will be <code id=\"role-digest\">{}</code>.</p>",
            if change.replaces { "" } else { " (a new role)" },
            esc(&change.digest)
        ));
        if changed {
            out.push_str("<pre class=\"diff\" id=\"role-diff\">");
            for (mark, line) in &change.lines {
                let class = match mark {
                    '+' => "added",
                    '-' => "removed",
                    _ => "kept",
                };
                out.push_str(&format!("<span class=\"{class}\">{mark} {}</span>\n", esc(line)));
            }
            out.push_str("</pre>");
        } else {
            out.push_str(
                "<p class=\"muted\" id=\"role-unchanged\">Nothing changes: the definition is the one in force.</p>",
            );
        }
        out.push_str("<p>Save it with the button below, or change the form and show the change again.</p></div>");
    }
    out.push_str(&format!("<form method=\"post\" action=\"/roles\" id=\"role-form\">{}", hidden_csrf(csrf)));
    for (name, label) in super::role_form::ROLE_FORM_FIELDS {
        let value = form.values.get(*name).map(String::as_str).unwrap_or_default();
        let input = if super::role_form::is_text_area(name) {
            // The newline after the tag is the one the HTML parser drops, so
            // a value's own first newline survives.
            format!("<textarea name=\"{0}\" id=\"role-{0}\" rows=\"6\">\n{1}</textarea>", esc(name), esc(value))
        } else {
            format!("<input name=\"{0}\" id=\"role-{0}\" value=\"{1}\" size=\"60\">", esc(name), esc(value))
        };
        let error = form
            .errors
            .get(*name)
            .map(|e| format!(" <span class=\"error\" id=\"error-{}\">{}</span>", esc(name), esc(e)))
            .unwrap_or_default();
        // A picker adds a known entry to a comma-separated list.
        let picker = match form.pickers.get(*name).filter(|options| !options.is_empty()) {
            Some(options) => format!(
                " <select class=\"picker\" id=\"pick-{0}\" data-pick-into=\"role-{0}\" aria-label=\"add to {0}\">\
<option value=\"\">add…</option>{1}</select>",
                esc(name),
                options
                    .iter()
                    .map(|option| format!("<option value=\"{0}\">{0}</option>", esc(option)))
                    .collect::<String>()
            ),
            None => String::new(),
        };
        out.push_str(&format!("<label>{} {input}{picker}{error}</label>", esc(label)));
    }
    out.push_str(
        "<button name=\"intent\" value=\"preview\" id=\"preview-role\">Show the change</button> \
<button name=\"intent\" value=\"save\" id=\"save-role\">Save</button> \
<span class=\"muted\">(saving is an act of your own being: <code>do author-role</code>)</span></form>",
    );
    out
}

/// What the roleFlow editor offers besides the flow: the roles it may name
/// and the context keys the substrate fills in.
pub struct FlowHelp<'a> {
    pub roles: Vec<String>,
    pub keys: &'a [&'a str],
    pub key_families: Vec<String>,
}

pub fn flow_page(
    being: &Json,
    csrf: &str,
    flash: Option<&str>,
    error: Option<&str>,
    draft: Option<&str>,
    known: &FlowHelp<'_>,
) -> String {
    let name = text(field(being, "name"));
    let flow = draft
        .map(str::to_string)
        .unwrap_or_else(|| serde_json::to_string_pretty(field(being, "roleFlow")).unwrap_or_default());
    let now = field(being, "now");
    let body = format!(
        "{}{}<form method=\"post\" action=\"/beings/{name_e}/flow\" id=\"flow-form\">{}\
<label>roleFlow (JSON: an array of {{when, role}} and {{stack: true, when, role}} clauses)\
<textarea name=\"flow\" id=\"flow\" rows=\"12\" data-flow-preview=\"{name_e}\">{}</textarea></label><button id=\"save-flow\">Save</button> \
<span class=\"muted\">(an act of your own being)</span></form>\
<h2>Live preview</h2><p id=\"preview\">In this moment it wears <strong>{}</strong>, stack {}.</p><ol id=\"preview-clauses\"></ol>\
<ul id=\"preview-warnings\" class=\"warning\"></ul>\
<details id=\"flow-known\"><summary>The roles and keys this editor knows</summary><p>Roles: {roles}</p>\
<p>Context keys: {keys}</p><p>Key families (any namespace and key below them): {families}</p></details>\
",
        flash.map(|f| format!("<p class=\"ok\" id=\"flash\">{}</p>", esc(f))).unwrap_or_default(),
        error.map(|e| format!("<p class=\"error\" id=\"error-flow\">{}</p>", esc(e))).unwrap_or_default(),
        hidden_csrf(csrf),
        esc(&flow),
        esc(&text(field(now, "primary"))),
        esc(&list(field(now, "stack")).iter().map(text).collect::<Vec<_>>().join(", ")),
        name_e = esc(&name),
        roles = known.roles.iter().map(|role| format!("<code>{}</code>", esc(role))).collect::<Vec<_>>().join(" "),
        keys = known.keys.iter().map(|key| format!("<code>{}</code>", esc(key))).collect::<Vec<_>>().join(" "),
        families = known.key_families.iter().map(|f| format!("<code>{}</code>", esc(f))).collect::<Vec<_>>().join(" "),
    );
    page(&format!("roleFlow of @{name}"), &body, Some(csrf))
}

pub fn moments_page(moments: &Json, query: &str, csrf: &str) -> String {
    let filter = field(moments, "filter");
    // An unset filter is an empty field, not the "—" shown for absent values.
    let value = |key: &str| esc(field(filter, key).as_str().unwrap_or_default());
    let choice = |name: &str, options: &[&str]| {
        let chosen = field(filter, name).as_str().unwrap_or_default();
        let mut out = format!("<select name=\"{name}\" id=\"filter-{name}\"><option value=\"\">any</option>");
        for option in options {
            let selected = if chosen == *option { " selected" } else { "" };
            out.push_str(&format!("<option value=\"{option}\"{selected}>{option}</option>"));
        }
        out + "</select>"
    };
    let mut body = format!(
        "<form method=\"get\" action=\"/moments\" id=\"moment-filter\"><label>being <input name=\"being\" id=\"filter-being\" value=\"{}\" placeholder=\"ada\"></label>\
<label>verb {}</label><label>outcome {}</label><label>role <input name=\"role\" id=\"filter-role\" value=\"{}\" placeholder=\"judge\"></label>\
<button id=\"filter\">Filter</button> <a href=\"/moments\">clear</a></form>",
        value("being"),
        choice("verb", &["see", "do", "summon", "be"]),
        choice("outcome", &["act", "see", "failure"]),
        value("role")
    );
    body.push_str(&format!(
        "<div id=\"live-moments\" data-live-moments=\"/moments/live{}\">{}</div>",
        if query.is_empty() { String::new() } else { format!("?{}", esc(query)) },
        moments_fragment(moments)
    ));
    page("Moments", &body, Some(csrf))
}

/// The moments running now and the latest traces that pass the filter, with
/// time, cursor, the being (a link), the wake, the role and the outcome (a
/// failure's whole reason).
pub fn moments_fragment(moments: &Json) -> String {
    let mut body =
        String::from("<h2>Running now</h2><table id=\"running\"><tr><th>being</th><th>beat</th><th>for (µs)</th></tr>");
    for moment in list(field(moments, "running")) {
        body.push_str(&format!(
            "<tr><td>@{}</td><td>{}</td><td>{}</td></tr>",
            esc(&text(field(moment, "being"))),
            esc(&text(field(moment, "beat"))),
            esc(&text(field(moment, "forUs")))
        ));
    }
    body.push_str("</table><h2>Latest moments</h2>");
    let recent = list(field(moments, "recent"));
    if recent.is_empty() {
        body.push_str("<p class=\"muted\" id=\"no-moments\">No kept moment passes this filter.</p>");
        return body;
    }
    body.push_str(&format!(
        "<table id=\"recent\"><tr><th>time</th><th>{}</th><th>being</th><th>{}</th><th>role</th><th>outcome</th><th>µs</th></tr>",
        help("cursor"),
        help("wake")
    ));
    for trace in recent {
        let outcome = text(field(trace, "outcome"));
        let class = if outcome.starts_with("failure") { " class=\"error\"" } else { "" };
        let name = text(field(trace, "name"));
        // A sealed act links to its moment; a see says why nothing was chosen.
        let shown = match field(trace, "seq").as_u64() {
            Some(seq) => format!("<a href=\"/beings/{}/moments/{seq}\">{} (#{seq})</a>", esc(&name), esc(&outcome)),
            None => esc(&outcome),
        };
        let mut why = String::new();
        if let Some(reason) = field(trace, "seeReason").as_str() {
            why.push_str(&format!(": {}", esc(reason)));
        }
        if let Some(prose) = field(field(trace, "llm"), "prose").as_str() {
            why.push_str(&format!(" <q>{}</q>", esc(prose)));
        }
        body.push_str(&format!(
            "<tr><td>{0}</td><td>{1}</td><td><a href=\"/beings/{2}\">@{2}</a></td><td>{3}</td><td>{4}</td><td{5}>{6}{7}</td><td>{8}</td></tr>",
            esc(&text(field(trace, "time"))),
            esc(&text(field(trace, "cursor"))),
            esc(&name),
            esc(&text(field(field(trace, "wake"), "kind"))),
            esc(&text(field(trace, "primary"))),
            class,
            shown,
            why,
            esc(&text(field(field(trace, "timingsUs"), "total")))
        ));
    }
    body.push_str("</table>");
    body
}

/// A role's colour class: the same role, the same hue on every page.
pub(super) fn colour(role: &str) -> String {
    let hash = blake3::hash(role.as_bytes());
    let hues = 360 / ROLE_HUE_STEP_DEGREES;
    let hue = u16::from_be_bytes([hash.as_bytes()[0], hash.as_bytes()[1]]) % hues * ROLE_HUE_STEP_DEGREES;
    format!("hue-{hue}")
}

/// Which page of the replay view (1 = the newest moments) holds the moment
/// at `index` (0 = the oldest) of `count`.
pub fn replay_page_of(index: usize, count: usize) -> usize {
    (count - 1 - index) / super::REPLAY_MOMENTS_PER_PAGE + 1
}

/// How many pages the replay view of `count` moments has (at least one).
pub fn replay_pages(count: usize) -> usize {
    count.div_ceil(super::REPLAY_MOMENTS_PER_PAGE).max(1)
}

/// The replay view, detailing one page of moments (`page`, 1 = the newest).
pub fn replay_page(replay: &Json, page_number: usize, csrf: &str) -> String {
    let name = text(field(replay, "name"));
    let clean = field(replay, "clean").as_bool() == Some(true);
    let mut body = format!(
        "<p id=\"verdict\" class=\"{}\">{} facts verified · {}</p>",
        if clean { "ok" } else { "error" },
        text(field(replay, "factsVerified")),
        if clean {
            "every moment matches".to_string()
        } else {
            format!("{} divergences", list(field(replay, "divergences")).len())
        }
    );
    for problem in list(field(replay, "problems")) {
        body.push_str(&format!("<p class=\"error\">{}</p>", esc(&text(problem))));
    }
    body.push_str("<h2>Timeline</h2><div class=\"tl\" id=\"timeline\">");
    let moments = list(field(replay, "moments"));
    for (index, moment) in moments.iter().enumerate() {
        let role = text(field(moment, "primary"));
        let verb = text(field(moment, "verb"));
        body.push_str(&format!(
            "<a href=\"?page={6}#m{0}\"><span class=\"{1} {2}\" title=\"#{0} {3}: {4}\">{5}</span></a>",
            esc(&text(field(moment, "seq"))),
            colour(&role),
            if field(moment, "matches").as_bool() == Some(true) { "" } else { "diverged" },
            esc(&role),
            esc(&text(field(moment, "act"))),
            esc(&verb.chars().next().map(String::from).unwrap_or_default()),
            replay_page_of(index, moments.len())
        ));
    }
    body.push_str("</div><p class=\"muted\">one mark per act, coloured by the role worn; the letter is the verb; outlined red: diverged</p>");
    for divergence in list(field(replay, "divergences")) {
        body.push_str(&format!(
            "<div class=\"error diverged\"><h3>Divergence at #{}</h3><pre>{}</pre></div>",
            esc(&text(field(divergence, "seq"))),
            esc(&serde_json::to_string_pretty(divergence).unwrap_or_default())
        ));
    }
    let pages = replay_pages(moments.len());
    let link = |page: usize, label: &str, id: &str| {
        format!("<a href=\"/beings/{}/replay?page={page}\" id=\"{id}\">{label}</a>", esc(&name))
    };
    let mut paging = format!("<p class=\"muted\" id=\"replay-paging\">page {page_number} of {pages}, newest first");
    if page_number > 1 {
        paging.push_str(&format!(" · {}", link(page_number - 1, "newer", "newer")));
    }
    if page_number < pages {
        paging.push_str(&format!(" · {}", link(page_number + 1, "older", "older")));
    }
    paging.push_str("</p>");
    body.push_str("<h2>Moments</h2>");
    body.push_str(&paging);
    let skip = (page_number - 1) * super::REPLAY_MOMENTS_PER_PAGE;
    for moment in moments.iter().rev().skip(skip).take(super::REPLAY_MOMENTS_PER_PAGE) {
        body.push_str(&format!(
            "<details id=\"m{0}\"{1}><summary>#{0} · {2} · wore {3} [{4}] · {5}</summary><h4>Clause trace</h4><ol>{6}</ol>\
<h4>{8}</h4><pre>{7}</pre><p><a href=\"/beings/{9}/moments/{0}\">the whole moment: values, prompt, cost</a></p></details>",
            esc(&text(field(moment, "seq"))),
            if field(moment, "matches").as_bool() == Some(true) { "" } else { " open class=\"diverged\"" },
            esc(&text(field(moment, "time"))),
            esc(&text(field(moment, "primary"))),
            esc(&list(field(moment, "stack")).iter().map(text).collect::<Vec<_>>().join(", ")),
            esc(&text(field(moment, "act"))),
            list(field(moment, "clauses")).iter().map(|c| format!("<li>{}</li>", esc(&text(c)))).collect::<String>(),
            esc(&serde_json::to_string_pretty(field(moment, "face")).unwrap_or_default()),
            help("face"),
            esc(&name),
        ));
    }
    page(&format!("Replay of @{name}"), &body, Some(csrf))
}

/// A being's memory at a cursor (docs/json/memory.json's value), with the
/// form that picks the cursor and the query.
pub fn memory_page(memory: &Json, query: &str, count: u64, csrf: &str) -> String {
    let name = text(field(memory, "name"));
    let at = field(memory, "at").as_u64().unwrap_or(0);
    let land_length = field(memory, "landLength").as_u64().unwrap_or(0);
    let items = list(field(memory, "items"));
    let mut body = format!(
        "<form method=\"get\" class=\"inline\" id=\"memory-form\">\
<label>at land seq <input id=\"memory-at\" name=\"at\" type=\"number\" min=\"0\" max=\"{land_length}\" value=\"{at}\"></label> \
<label>recall <input id=\"memory-query\" name=\"query\" value=\"{}\" size=\"30\"></label> \
<label>best <input id=\"memory-count\" name=\"count\" type=\"number\" min=\"1\" max=\"32\" value=\"{count}\"></label> \
<button id=\"memory-show\">Show</button></form>\
<p class=\"muted\" id=\"memory-summary\">@{} as it stood before land seq {at} (the land holds {land_length} facts): {} items. \
Nothing is ever removed: a superseded note stays, marked with the note that superseded it. Importance remembered since the latest reflection: {}.</p>",
        esc(query),
        esc(&name),
        items.len(),
        esc(&text(field(memory, "importanceSinceReflection")))
    );
    if let Some(recall) = field(memory, "recall").as_object() {
        body.push_str(&format!(
            "<h2>Recall for “{}”</h2><table id=\"recall\"><tr><th>total</th><th>relevance</th><th>recency</th>\
<th>importance</th><th>land seq</th><th>kind</th><th>text</th></tr>",
            esc(&text(recall.get("query").unwrap_or(&Json::Null)))
        ));
        for item in list(recall.get("items").unwrap_or(&Json::Null)) {
            let score = field(item, "score");
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&text(field(score, "total"))),
                esc(&text(field(score, "relevance"))),
                esc(&text(field(score, "recency"))),
                esc(&text(field(score, "importance"))),
                esc(&text(field(item, "landSeq"))),
                esc(&text(field(item, "kind"))),
                esc(&text(field(item, "text")))
            ));
        }
        body.push_str("</table><p class=\"muted\">each part in thousandths: BM25 relevance (the best is 1,000), recency by land seqs, importance × 100 (docs/memory.md)</p>");
    }
    body.push_str(
        "<h2>Items, oldest first</h2><table id=\"memory-items\"><tr><th>land seq</th><th>kind</th>\
<th>importance</th><th>text</th><th>superseded</th><th>reflection</th></tr>",
    );
    for item in items {
        let by = field(item, "supersededBy");
        let superseded = if by.is_null() {
            String::new()
        } else {
            format!(
                "at land seq {} by <code>{}</code>{}",
                esc(&text(field(by, "landSeq"))),
                esc(&text(field(by, "fact")).chars().take(12).collect::<String>()),
                field(by, "why").as_str().map(|why| format!(": {}", esc(why))).unwrap_or_default()
            )
        };
        let covers = list(field(item, "covers")).len();
        let covered = field(item, "coveredBy");
        let reflection = match (covers, covered.is_null()) {
            (0, true) => String::new(),
            (0, false) => format!(
                "covered by <code>{}</code> at land seq {}",
                esc(&text(field(covered, "fact")).chars().take(12).collect::<String>()),
                esc(&text(field(covered, "landSeq")))
            ),
            (covers, _) => format!("sums up {covers} items"),
        };
        body.push_str(&format!(
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{superseded}</td><td>{reflection}</td></tr>",
            if by.is_null() { "" } else { " class=\"muted superseded\"" },
            esc(&text(field(item, "landSeq"))),
            esc(&text(field(item, "kind"))),
            esc(&text(field(item, "importance"))),
            esc(&text(field(item, "text")))
        ));
    }
    body.push_str("</table>");
    for problem in list(field(memory, "problems")) {
        body.push_str(&format!("<p class=\"error\">{}</p>", esc(&text(field(problem, "reason")))));
    }
    body.push_str(&format!("<p><a href=\"/beings/{0}\">Back to @{0}</a></p>", esc(&name)));
    page(&format!("Memory of @{name}"), &body, Some(csrf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        let cases = [
            ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
            ("a\"b'c&d", "a&quot;b&#39;c&amp;d"),
            ("plain", "plain"),
        ];
        for (input, expected) in cases {
            assert_eq!(esc(input), expected);
        }
    }

    #[test]
    fn each_glossary_word_is_a_tooltip_with_its_meaning() {
        for (word, meaning) in GLOSSARY {
            let shown = help(word);
            assert!(shown.starts_with("<abbr class=\"help\" title=\""), "{shown}");
            assert!(shown.contains(&esc(meaning)) && shown.ends_with(&format!(">{}</abbr>", esc(word))), "{shown}");
        }
    }

    #[test]
    fn a_replay_moment_is_on_the_page_counted_from_the_newest() {
        // (index from the oldest, moments, page)
        for (index, count, page) in
            [(0, 1, 1), (49, 50, 1), (0, 50, 1), (0, 51, 2), (1, 51, 1), (0, 120, 3), (70, 120, 1), (69, 120, 2)]
        {
            assert_eq!(replay_page_of(index, count), page, "moment {index} of {count}");
        }
        for (count, pages) in [(0, 1), (1, 1), (50, 1), (51, 2), (120, 3)] {
            assert_eq!(replay_pages(count), pages, "{count} moments");
        }
    }
}

/// What the accounts page shows besides the accounts: a token just issued
/// (shown this once), a success line, the invite form's values and errors.
#[derive(Debug, Default)]
pub struct AccountsForm {
    pub issued: Option<Json>,
    pub done: Option<String>,
    pub values: std::collections::BTreeMap<String, String>,
    pub errors: std::collections::BTreeMap<String, String>,
}

/// The accounts page: who you are and your password; for the operator,
/// every account (a new token, an end) and the invite form.
pub fn accounts_page(accounts: &Json, csrf: &str, form: &AccountsForm) -> String {
    let you = field(accounts, "you");
    let operator = field(you, "operator") == &Json::Bool(true);
    let mut out = String::new();
    if let Some(done) = &form.done {
        out.push_str(&format!("<p class=\"done\" id=\"done\">{}</p>", esc(done)));
    }
    if let Some(issued) = &form.issued {
        out.push_str(&format!(
            "<div class=\"issued\" id=\"issued\"><p>The account <b id=\"issued-account\">{}</b> drives {}. \
Give its person this token; it is shown only now (a new one can be issued, which ends this one):</p>\
<p><code id=\"issued-token\">{}</code></p></div>",
            esc(&text(field(issued, "account"))),
            being_link(text(field(issued, "being")).trim_start_matches('@')),
            esc(&text(field(issued, "token")))
        ));
    }
    let being = text(field(you, "being"));
    out.push_str(&format!(
        "<p id=\"you\">You are logged in as <b>{}</b>{}.</p>",
        esc(&text(field(you, "account"))),
        if being.is_empty() {
            String::new()
        } else {
            format!(", acting as {}", being_link(being.trim_start_matches('@')))
        }
    ));
    let error_of = |name: &str| {
        form.errors
            .get(name)
            .map(|message| format!("<span class=\"error\" id=\"error-{}\">{}</span>", esc(name), esc(message)))
            .unwrap_or_default()
    };
    let value_of = |name: &str| esc(form.values.get(name).map(String::as_str).unwrap_or_default());
    if !operator {
        out.push_str(&format!(
            "<h2>Password</h2><p class=\"muted\">Set a password to log in with your account name instead of the token.</p>\
<form method=\"post\" action=\"/password\">{}<label>New password <input id=\"new-password\" name=\"password\" \
type=\"password\" autocomplete=\"new-password\"></label> {}<button id=\"set-password\">Set password</button></form>",
            hidden_csrf(csrf),
            error_of("password")
        ));
    }
    out.push_str("<h2>Accounts</h2>");
    let rows = list(field(accounts, "accounts"));
    if rows.is_empty() {
        out.push_str("<p class=\"muted\" id=\"no-accounts\">No one has been invited yet.</p>");
    } else {
        out.push_str(
            "<div class=\"scroll\"><table id=\"accounts\"><tr><th>account</th><th>being</th><th>password</th>",
        );
        if operator {
            out.push_str("<th></th>");
        }
        out.push_str("</tr>");
        for row in rows {
            let account = text(field(row, "account"));
            out.push_str(&format!(
                "<tr id=\"account-{0}\"><td>{0}</td><td>{1}</td><td>{2}</td>",
                esc(&account),
                being_link(text(field(row, "being")).trim_start_matches('@')),
                if field(row, "passwordSet") == &Json::Bool(true) { "set" } else { "not set" }
            ));
            if operator {
                out.push_str(&format!(
                    "<td><form class=\"inline\" method=\"post\" action=\"/accounts/{0}/token\">{1}\
<button id=\"new-token-{0}\">New token</button></form> <form class=\"inline\" method=\"post\" \
action=\"/accounts/{0}/revoke\">{1}<button id=\"revoke-{0}\">End account</button></form></td>",
                    esc(&account),
                    hidden_csrf(csrf)
                ));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table></div>");
    }
    if operator {
        out.push_str(&format!(
            "<h2>Invite a person</h2><p class=\"muted\">They get a human being of their own (born now unless it \
exists) and a token to log in with. They may drive that being, and birth and inhabit only its descendants.</p>\
<form method=\"post\" action=\"/accounts\" id=\"invite\">{}{}\
<p><label>Account name <input id=\"invite-account\" name=\"account\" value=\"{}\" required></label> {}</p>\
<p><label>Their being <input id=\"invite-being\" name=\"being\" value=\"{}\" placeholder=\"the account name\"></label> {}</p>\
<p><label>Born under <input id=\"invite-parent\" name=\"parent\" value=\"{}\" placeholder=\"your own being\"></label> {} \
<span class=\"muted\">the operator's being or another account's</span></p>\
<button id=\"invite-send\">Invite</button></form>",
            hidden_csrf(csrf),
            error_of(""),
            value_of("account"),
            error_of("account"),
            value_of("being"),
            error_of("being"),
            value_of("parent"),
            error_of("parent")
        ));
    }
    page("Accounts", &out, Some(csrf))
}
