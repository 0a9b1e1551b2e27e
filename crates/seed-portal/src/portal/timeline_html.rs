//! The timeline page and a moment's page, rendered from the values of
//! `timeline::timeline_json` and `views::moment_json`.
//!
//! A lane is an SVG 1,000 units wide, stretched to the page's width
//! (`preserveAspectRatio="none"`), so a mark's x is its land seq's place in
//! the window; positions are attributes, never inline styles (the
//! Content-Security-Policy admits none). Labels stay HTML, so they stay
//! readable on a phone.

use super::html::{being_link, colour, esc, field, help, list, page, text};
use super::timeline::{neighbours, TimelineQuery};
use serde_json::Value as Json;

/// Width of a lane's drawing, in SVG units.
const LANE_UNITS: u64 = 1_000;
/// Narrowest mark, in SVG units (a mark is wider when the window is narrow).
const MARK_UNITS_MIN: u64 = 2;

fn number(value: &Json) -> u64 {
    value.as_u64().unwrap_or(0)
}

/// The x of a land seq in a window `[from, to)`.
fn x_of(land_seq: u64, from: u64, to: u64) -> u64 {
    (land_seq.saturating_sub(from)) * LANE_UNITS / (to - from).max(1)
}

/// The link to the timeline `query` asks for, with a page and window.
fn timeline_link(query: &TimelineQuery, page: usize, window: (u64, u64), label: &str, id: &str) -> String {
    format!("<a href=\"/timeline?{}\" id=\"{id}\">{label}</a>", esc(&query.to_query(page, window.0, window.1)))
}

/// The tooltip and link of one mark.
fn mark_target(name: &str, mark: &Json) -> (String, String) {
    let seq = number(field(mark, "seq"));
    let kind = text(field(mark, "kind"));
    let mut title = format!("#{seq} · land seq {} · {}", number(field(mark, "landSeq")), text(field(mark, "time")));
    if kind == "act" {
        title.push_str(&format!(
            "\n{} wearing {}\n{}",
            text(field(mark, "verb")),
            text(field(mark, "primary")),
            text(field(mark, "summary"))
        ));
        if let Some(key) = field(mark, "wokeBySignal").as_str() {
            title.push_str(&format!("\nwoken by the signal {key}"));
        }
    } else {
        title.push_str(&format!("\n{kind}"));
    }
    for signal in list(field(mark, "signals")) {
        title.push_str(&format!("\nset the signal {} = {}", text(field(signal, "key")), field(signal, "value")));
    }
    let href = if kind == "act" { format!("/beings/{name}/moments/{seq}") } else { format!("/beings/{name}") };
    (title, href)
}

/// One lane's drawing: a band per stretch of a role worn (from one act to
/// the next), a mark per fact, signal marks at the edges.
fn lane_svg(lane: &Json, from: u64, to: u64) -> String {
    let name = text(field(lane, "name"));
    let marks = list(field(lane, "marks"));
    let mark_width = (LANE_UNITS * 8 / 10 / (to - from).max(1)).max(MARK_UNITS_MIN);
    let mut svg = format!(
        "<svg class=\"lane\" viewBox=\"0 0 {LANE_UNITS} 28\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"@{}: {} facts drawn\">",
        esc(&name),
        marks.len()
    );
    let acts: Vec<&Json> = marks.iter().filter(|mark| field(mark, "kind") == "act").collect();
    for (index, act) in acts.iter().enumerate() {
        let Some(role) = field(act, "primary").as_str() else { continue };
        let start = x_of(number(field(act, "landSeq")), from, to);
        let end = match acts.get(index + 1) {
            Some(next) => x_of(number(field(next, "landSeq")), from, to),
            None if field(lane, "ended") == &Json::Bool(true) => start + mark_width,
            None => LANE_UNITS,
        };
        svg.push_str(&format!(
            "<rect class=\"band {}\" x=\"{start}\" y=\"6\" width=\"{}\" height=\"16\"><title>{}</title></rect>",
            colour(role),
            end.saturating_sub(start).max(1),
            esc(role)
        ));
    }
    for mark in marks {
        let x = x_of(number(field(mark, "landSeq")), from, to);
        let kind = text(field(mark, "kind"));
        let class = match kind.as_str() {
            "act" => format!("mark v-{}", text(field(mark, "verb"))),
            "genesis" => "mark born".to_string(),
            "end" => "mark ended".to_string(),
            _ => "mark other".to_string(),
        };
        let (title, href) = mark_target(&name, mark);
        svg.push_str(&format!(
            "<a href=\"{}\" class=\"mark-link\"><rect class=\"{class}\" x=\"{x}\" y=\"2\" width=\"{mark_width}\" height=\"24\">\
<title>{}</title></rect></a>",
            esc(&href),
            esc(&title)
        ));
        if !list(field(mark, "signals")).is_empty() {
            svg.push_str(&format!(
                "<rect class=\"sig-set\" x=\"{x}\" y=\"0\" width=\"{}\" height=\"5\"/>",
                mark_width * 2
            ));
        }
        if field(mark, "wokeBySignal").is_string() {
            svg.push_str(&format!(
                "<rect class=\"sig-wake\" x=\"{x}\" y=\"23\" width=\"{}\" height=\"5\"/>",
                mark_width * 2
            ));
        }
    }
    svg.push_str("</svg>");
    svg
}

/// The timeline: filters, the window's zoom and pan, the time axis, a lane
/// per being of this page, the legend.
pub fn timeline_page(timeline: &Json, query: &TimelineQuery, csrf: &str) -> String {
    let window = field(timeline, "window");
    let (from, to, cursor) =
        (number(field(window, "from")), number(field(window, "to")), number(field(window, "cursor")));
    let (page_number, pages) = (number(field(timeline, "page")) as usize, number(field(timeline, "pages")) as usize);
    let value = |item: &Option<String>| esc(item.as_deref().unwrap_or_default());
    let legend_roles = list(field(timeline, "legend"));
    let mut body = format!(
        "<form method=\"get\" action=\"/timeline\" id=\"timeline-filter\" class=\"filters\">\
<label>being <input name=\"being\" value=\"{}\" placeholder=\"part of a name\"></label>\
<label>role <input name=\"role\" value=\"{}\" placeholder=\"worn at its last act\" list=\"timeline-roles\"></label>\
<label>space <input name=\"space\" value=\"{}\" placeholder=\"a space and those under it\"></label>\
<label>from {} <input name=\"from\" value=\"{from}\" inputmode=\"numeric\"></label>\
<label>to <input name=\"to\" value=\"{to}\" inputmode=\"numeric\"></label>\
<button id=\"timeline-show\">Show</button> <a href=\"/timeline\">latest, every being</a></form>\
<datalist id=\"timeline-roles\">{}</datalist>",
        value(&query.being),
        value(&query.role),
        value(&query.space),
        help("land seq"),
        legend_roles.iter().map(|role| format!("<option value=\"{}\">", esc(&text(role)))).collect::<String>()
    );
    let [zoom_in, zoom_out, earlier, later] = neighbours(from, to, cursor);
    let mut controls = vec![format!("land seqs {from} to {to} of {cursor} ({} wide)", to.saturating_sub(from))];
    for (window, label, id) in [
        (earlier, "← earlier", "tl-earlier"),
        (zoom_in, "zoom in", "tl-zoom-in"),
        (zoom_out, "zoom out", "tl-zoom-out"),
        (later, "later →", "tl-later"),
    ] {
        if let Some(window) = window {
            controls.push(timeline_link(query, page_number, window, label, id));
        }
    }
    body.push_str(&format!("<p id=\"timeline-window\" class=\"controls\">{}</p>", controls.join(" · ")));
    let lanes = list(field(timeline, "lanes"));
    let total = number(field(timeline, "lanesTotal")) as usize;
    if lanes.is_empty() {
        body.push_str("<p class=\"muted\" id=\"no-lanes\">No being passes this filter.</p>");
        return page("Timeline", &body, Some(csrf));
    }
    let first = (page_number - 1) * number(field(timeline, "lanesPerPage")) as usize + 1;
    let mut paging = format!("beings {first}–{} of {total}", first + lanes.len() - 1);
    if page_number > 1 {
        paging.push_str(&format!(
            " · {}",
            timeline_link(query, page_number - 1, (from, to), "previous beings", "tl-previous")
        ));
    }
    if page_number < pages {
        paging.push_str(&format!(" · {}", timeline_link(query, page_number + 1, (from, to), "next beings", "tl-next")));
    }
    body.push_str(&format!("<p class=\"muted\" id=\"timeline-paging\">{paging}</p>"));
    body.push_str("<div class=\"timeline\" id=\"timeline\"><div class=\"lane-row axis\"><div class=\"lane-label\"></div><div class=\"ticks\">");
    for tick in list(field(timeline, "axis")) {
        // The time of day under the land seq; the whole time as its tooltip.
        let time = text(field(tick, "time"));
        let time_of_day = time.split('T').nth(1).and_then(|rest| rest.split('.').next()).unwrap_or(time.as_str());
        body.push_str(&format!(
            "<span class=\"tick\" title=\"{}\">{}<br><span class=\"muted\">{}</span></span>",
            esc(&time),
            number(field(tick, "landSeq")),
            esc(time_of_day)
        ));
    }
    body.push_str("</div></div>");
    for lane in lanes {
        let name = text(field(lane, "name"));
        let mut notes = vec![esc(&text(field(lane, "cognition")))];
        if field(lane, "inhabited") == &Json::Bool(true) {
            notes.push("inhabited".into());
        }
        if field(lane, "ended") == &Json::Bool(true) {
            notes.push("ended".into());
        }
        let hidden = number(field(lane, "notDrawn"));
        if hidden > 0 {
            notes.push(format!("<span class=\"error\">{hidden} older facts here not drawn: zoom in</span>"));
        }
        body.push_str(&format!(
            "<div class=\"lane-row\" id=\"lane-{}\"><div class=\"lane-label\">{} <span class=\"muted\">{}</span></div>{}</div>",
            esc(&name),
            being_link(&name),
            notes.join(" · "),
            lane_svg(lane, from, to)
        ));
    }
    body.push_str("</div><h2>Legend</h2><p id=\"timeline-legend\" class=\"legend\">");
    for role in legend_roles {
        let role = text(role);
        body.push_str(&format!(
            "<span class=\"key\"><span class=\"swatch {}\"></span>{}</span> ",
            colour(&role),
            esc(&role)
        ));
    }
    body.push_str(
        "</p><p class=\"legend muted\">Bands: the role a being wore from one act to its next. Marks: \
<span class=\"key\"><span class=\"swatch v-see\"></span>see</span> \
<span class=\"key\"><span class=\"swatch v-do\"></span>do</span> \
<span class=\"key\"><span class=\"swatch v-summon\"></span>summon</span> \
<span class=\"key\"><span class=\"swatch v-be\"></span>be</span> \
<span class=\"key\"><span class=\"swatch born\"></span>born</span> \
<span class=\"key\"><span class=\"swatch ended\"></span>ended</span> \
<span class=\"key\"><span class=\"swatch other\"></span>another fact</span>. \
<span class=\"swatch sig-set\"></span>A tick above a mark: the fact set a signal; below it: the act was woken by one. \
Click a mark to open its moment.</p>",
    );
    page("Timeline", &body, Some(csrf))
}

/// Millionths of a currency unit as a decimal.
fn cost(micros: u64) -> String {
    format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000)
}

/// One moment: what woke it, the stack, the clause trace with the values it
/// read, the prompt, the act, tokens and cost, the face.
pub fn moment_page(moment: &Json, csrf: &str) -> String {
    let name = text(field(moment, "name"));
    let seq = number(field(moment, "seq"));
    let land_seq = number(field(moment, "landSeq"));
    let matches = field(moment, "matches") == &Json::Bool(true);
    let wake = field(moment, "wake");
    let woke = match text(field(wake, "kind")).as_str() {
        "summon" => format!("a summon from {}", esc(&text(field(wake, "from")))),
        "signal" => format!("the signal <code>{}</code> changed", esc(&text(field(wake, "key")))),
        "tick" => format!("tick {}", number(field(wake, "tick"))),
        other => esc(other),
    };
    let mut around = Vec::new();
    if let Some(previous) = field(moment, "previousAct").as_u64() {
        around.push(format!(
            "<a href=\"/beings/{}/moments/{previous}\" id=\"previous-act\">← #{previous}</a>",
            esc(&name)
        ));
    }
    if let Some(next) = field(moment, "nextAct").as_u64() {
        around.push(format!("<a href=\"/beings/{}/moments/{next}\" id=\"next-act\">#{next} →</a>", esc(&name)));
    }
    let window = (land_seq.saturating_sub(50), land_seq + 50);
    around.push(format!(
        "<a href=\"/timeline?being={}&amp;from={}&amp;to={}\" id=\"on-timeline\">on the timeline</a>",
        esc(&name),
        window.0,
        window.1
    ));
    around.push(format!("<a href=\"/beings/{}/replay\">replay of @{}</a>", esc(&name), esc(&name)));
    let mut body = format!(
        "<p>{} · <b>#{seq}</b> of {} · {} {} · {} {land_seq} · woken by {woke}</p>\
<p id=\"moment-verdict\" class=\"{}\">{}</p><p class=\"controls\">{}</p>",
        esc(&text(field(moment, "time"))),
        being_link(&name),
        help("cursor"),
        number(field(moment, "cursor")),
        help("land seq"),
        if matches { "ok" } else { "error" },
        if matches {
            "Replayed: the recomputed act matches the stored one byte for byte."
        } else {
            "Replayed: the recomputed act differs from the stored one (below)."
        },
        around.join(" · ")
    );
    for problem in list(field(moment, "problems")) {
        body.push_str(&format!("<p class=\"error\">{}</p>", esc(&text(problem))));
    }
    body.push_str(&format!(
        "<h2>The act</h2><p id=\"moment-act\"><b>{}</b> wearing <b>{}</b>: {}</p>",
        esc(&text(field(moment, "verb"))),
        esc(&text(field(moment, "primary"))),
        esc(&text(field(moment, "summary")))
    ));
    body.push_str(&format!("<h2>The {}</h2><ol id=\"moment-stack\">", help("stack")));
    for role in list(field(moment, "stack")) {
        let role_name = text(field(role, "name"));
        body.push_str(&format!(
            "<li><span class=\"swatch {}\"></span><a href=\"/roles#role-{1}\">{1}</a> <code class=\"muted\">{2}</code></li>",
            colour(&role_name),
            esc(&role_name),
            esc(&text(field(role, "digest")).chars().take(16).collect::<String>())
        ));
    }
    body.push_str(&format!("</ol><h2>The {} walk</h2><ol id=\"moment-clauses\">", help("roleFlow")));
    let clauses = list(field(moment, "clauses"));
    if clauses.is_empty() {
        body.push_str("<li class=\"muted\">no clause: the default role</li>");
    }
    for clause in clauses {
        let keys: Vec<String> = list(field(clause, "keys"))
            .iter()
            .map(|key| {
                let value = field(key, "value");
                let shown = if value.is_null() {
                    "<i>absent</i>".to_string()
                } else {
                    format!("<code>{}</code>", esc(&value.to_string()))
                };
                format!("<li><code>{}</code> = {shown}</li>", esc(&text(field(key, "key"))))
            })
            .collect();
        body.push_str(&format!(
            "<li>{}{}</li>",
            esc(&text(field(clause, "text"))),
            if keys.is_empty() { String::new() } else { format!("<ul class=\"keys\">{}</ul>", keys.concat()) }
        ));
    }
    body.push_str("</ol>");
    if let Some(prompt) = field(moment, "rolePrompt").as_str().filter(|prompt| !prompt.trim().is_empty()) {
        body.push_str(&format!(
            "<h2>The composed role's prompt</h2><pre class=\"prose\" id=\"role-prompt\">{}</pre>",
            esc(prompt)
        ));
    }
    let panel = field(moment, "panel");
    if panel.is_object() {
        body.push_str(&format!(
            "<h2>The panel</h2><p id=\"panel-choice\">chose <strong>{}</strong>'s proposal by {}</p>\
<table id=\"panel\"><tr><th>member</th><th>proposed</th><th>by</th></tr>",
            esc(&text(field(panel, "chosen"))),
            esc(&text(field(panel, "chosenBy")))
        ));
        let ruler = field(panel, "ruler");
        for member in list(field(panel, "members")).iter().chain(ruler.is_object().then_some(ruler)) {
            let chosen = field(member, "name") == field(panel, "chosen");
            let said = match field(member, "proposal").as_str() {
                Some(proposal) => esc(proposal),
                None if member == ruler => "(the ruler: chose)".to_string(),
                None => format!("<span class=\"error\">{}</span>", esc(&text(field(member, "failure")))),
            };
            let by = match field(member, "model").as_str() {
                Some(model) => format!("{} ({} tokens)", esc(model), number(field(member, "tokens"))),
                None if field(member, "script") == &Json::Bool(true) => "script".to_string(),
                None => "—".to_string(),
            };
            body.push_str(&format!(
                "<tr{}><td>{}{}</td><td>{said}</td><td>{by}</td></tr>",
                if chosen { " class=\"chosen\"" } else { "" },
                esc(&text(field(member, "name"))),
                if chosen { " ✓" } else { "" },
            ));
        }
        body.push_str("</table>");
    }
    let llm = field(moment, "llm");
    if llm.is_object() {
        let prompt = field(llm, "prompt");
        body.push_str(&format!(
            "<h2>The model call</h2><p id=\"moment-llm\">{} via <code>{}</code> · {} prompt + {} completion tokens · cost {}</p>",
            esc(&text(field(llm, "model"))),
            esc(&text(field(llm, "connection"))),
            number(field(llm, "promptTokens")),
            number(field(llm, "completionTokens")),
            cost(number(field(llm, "costMicros")))
        ));
        match field(prompt, "error").as_str() {
            Some(error) => body.push_str(&format!("<p class=\"error\">The prompt could not be rebuilt: {}</p>", esc(error))),
            None => body.push_str(&format!(
                "<h3>System message</h3><pre class=\"prose\" id=\"llm-system\">{}</pre><h3>User message</h3><pre class=\"prose\" id=\"llm-user\">{}</pre>",
                esc(&text(field(prompt, "system"))),
                esc(&text(field(prompt, "user")))
            )),
        }
        body.push_str(&format!(
            "<h3>Response</h3><pre id=\"llm-response\">{}</pre>",
            esc(&text(field(llm, "response")))
        ));
    }
    if let Some(divergence) = field(moment, "divergence").as_object() {
        body.push_str(&format!(
            "<h2 class=\"error\">Divergence</h2><pre class=\"diverged\">{}</pre>",
            esc(&serde_json::to_string_pretty(divergence).unwrap_or_default())
        ));
    }
    body.push_str(&format!(
        "<details><summary>The stored act (fact {})</summary><pre id=\"moment-body\">{}</pre></details>\
<details><summary>The {}</summary><pre>{}</pre></details>\
<details><summary>Every context key</summary><pre>{}</pre></details>",
        esc(&text(field(moment, "id")).chars().take(16).collect::<String>()),
        esc(&serde_json::to_string_pretty(field(moment, "act")).unwrap_or_default()),
        help("face"),
        esc(&serde_json::to_string_pretty(field(moment, "face")).unwrap_or_default()),
        esc(&serde_json::to_string_pretty(field(moment, "context")).unwrap_or_default())
    ));
    page(&format!("@{name} #{seq}"), &body, Some(csrf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_land_seq_is_placed_in_proportion_across_the_window() {
        // (land seq, window, x)
        for (land_seq, from, to, x) in
            [(0, 0, 100, 0), (50, 0, 100, 500), (99, 0, 100, 990), (150, 100, 200, 500), (5, 5, 6, 0), (7, 10, 20, 0)]
        {
            assert_eq!(x_of(land_seq, from, to), x, "{land_seq} in {from}..{to}");
        }
    }

    #[test]
    fn costs_are_shown_in_whole_units_with_six_places() {
        for (micros, shown) in [(0, "0.000000"), (1, "0.000001"), (1_234_567, "1.234567"), (40_000, "0.040000")] {
            assert_eq!(cost(micros), shown);
        }
    }
}
