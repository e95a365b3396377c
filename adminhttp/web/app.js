// The umstore status page: polls /v1/deployment every second and redraws
// the hosts, stores, groups, failure analysis and sources. Plain JavaScript,
// no build step, no external resources.
"use strict";

(function () {
  const POLL_MS = 1000;
  const TIMEOUT_MS = 4000;

  // What each page state is called and the symbol shown beside it, so that
  // a state never depends on colour alone.
  const STATES = {
    "leader": ["★", "leader"],
    "up": ["✓", "up"],
    "candidate": ["?", "candidate"],
    "catching-up": ["↻", "catching up"],
    "waiting": ["…", "waiting to join"],
    "empty": ["○", "empty"],
    "starting": ["◐", "starting"],
    "stopped": ["■", "stopped"],
    "down": ["✕", "down"],
    "failed": ["⚠", "failed"],
    "refused": ["⊘", "refused (no store with state)"],
  };

  const $ = (id) => document.getElementById(id);
  let lastOK = null;  // Date of the last answer
  let lostSince = null;

  // el builds an element: el("div", {class: "x", "data-a": "b"}, child, "text").
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // fill replaces the children of the element with id, skipping empty ones.
  function fill(id, ...children) {
    $(id).replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  }

  // shown makes text that came from the stores (source names, a leader's
  // address, errors) visible as it is: control, format and line-separator
  // characters become \u{...} escapes instead of vanishing or reordering
  // the text around them. Every text reaches the page through text nodes
  // and setAttribute (el above), never as HTML, so "<script>" is shown, not
  // run.
  const shown = (t) => String(t).replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => "\\u{" + c.codePointAt(0).toString(16) + "}");

  const clock = (d) => d.toTimeString().slice(0, 8);
  const num = (n) => Number(n || 0).toLocaleString("en-US");
  const stateLabel = (s) => (STATES[s] || ["", s])[1];
  const stateSymbol = (s) => (STATES[s] || ["", ""])[0];
  const groupClass = (i) => "g" + (((i - 1) % 6) + 1);

  function list(names) {
    if (names.length <= 1) return names.join("");
    return names.slice(0, -1).join(", ") + " and " + names[names.length - 1];
  }

  function renderHeader(v) {
    document.title = "umstore " + v.deployment + (v.publishing ? "" : " — publishing stopped");
    $("deployment").textContent = v.deployment;
    const served = v.served_by || [];
    $("served-by").textContent = "served by the daemon of host" + (served.length > 1 ? "s " : " ") +
      list(served) + " · intergroup stability " + v.intergroup +
      (v.intragroup ? " · intragroup stability " + v.intragroup : "");
    const s = $("summary");
    s.dataset.publishing = v.publishing ? "yes" : "no";
    s.replaceChildren(
      el("strong", {}, v.publishing ? "✓ Publishing possible" : "✕ Publishing stopped"),
      " — " + v.reason);
  }

  function mebibytes(n) {
    return (n / 1048576).toFixed(1) + " MiB";
  }

  function storeBox(s, group) {
    const leader = s.state === "leader";
    const facts = [];
    if (s.state === "down") {
      facts.push("no answer");
    } else if (s.catching_up && s.catch_up_target) {
      // A restore's progress: entries applied of the target, bytes received.
      facts.push("caught up " + num(s.applied_index) + " of " + num(s.catch_up_target) +
        " entries, " + mebibytes(s.catch_up_bytes || 0) + " received");
    } else {
      facts.push("applied " + num(s.applied_index));
    }
    if (s.last_stop) {
      facts.push("last stop " + s.last_stop);
    }
    if (s.format_level) {
      // The binary's format level; a store that does not say its version
      // runs a release older than the field (docs/operations.md, "Upgrading").
      facts.push("level " + s.format_level + ", " + (s.version ? shown(s.version.split(" (")[0]) : "v0.1.0 or older"));
    }
    const title = [
      s.name + " (group " + s.group + ", host " + s.host + ", " + s.address + ")",
      "state: " + stateLabel(s.state) + (s.raft_state ? " (raft: " + s.raft_state + ")" : ""),
      s.leader ? "knows leader: " + shown(s.leader) : "",
      s.group_id ? "group id: " + s.group_id : "",
      s.version ? "binary: " + shown(s.version) : "",
      s.error ? "error: " + shown(s.error) : "",
    ].filter(Boolean).join("\n");
    return el("div", {
      "class": "store " + groupClass(s.group),
      "role": "listitem",
      "data-store": s.name,
      "data-state": s.state,
      "data-group": s.group,
      "data-host": s.host,
      "data-leader": leader ? "true" : "false",
      "data-local": s.local ? "true" : "false",
      "aria-label": s.name + ", group " + s.group + ", " + stateLabel(s.state),
      "title": title,
    },
      el("div", {"class": "store-name"}, leader ? el("span", {"class": "crown", "aria-hidden": "true"}, "★ ") : null, s.name),
      el("div", {"class": "store-state"}, leader ? null : el("span", {"aria-hidden": "true"}, stateSymbol(s.state) + " "), stateLabel(s.state)),
      el("div", {"class": "store-facts"}, facts.join(" · ")),
      s.error && s.state !== "down" ? el("div", {"class": "store-error"}, s.error) : null,
    );
  }

  function renderHosts(v) {
    const stores = new Map(v.stores.map((s) => [s.name, s]));
    const hosts = v.hosts.map((h) => {
      const rows = v.groups.map((g) => {
        const here = h.stores.filter((n) => stores.get(n).group === g.index);
        return el("div", {"class": "host-row"},
          el("div", {"class": "row-label " + groupClass(g.index)}, "group " + g.index),
          el("div", {"class": "row-stores", "role": "list"},
            here.length ? here.map((n) => storeBox(stores.get(n), g)) : el("span", {"class": "none"}, "no store")));
      });
      const badges = [
        h.local ? el("span", {"class": "badge local"}, "this daemon") : null,
        el("span", {"class": "badge host-" + h.state}, h.state === "up" ? "✓ up" : h.state === "down" ? "✕ down" : "◐ degraded"),
      ];
      return el("article", {"class": "host", "data-host": h.name, "data-host-state": h.state, "data-local": h.local ? "true" : "false"},
        el("header", {"class": "host-head"},
          el("h3", {}, "host " + h.name, el("span", {"class": "address"}, h.address)),
          el("div", {"class": "badges"}, badges)),
        rows);
    });
    fill("hosts", hosts);

    const groups = v.groups.map((g) => {
      const ok = g.leader !== "";
      const onPreferred = g.preferred_host && g.leader_host === g.preferred_host;
      return el("div", {"class": "group " + groupClass(g.index), "data-group": g.index, "data-group-leader": g.leader,
                        "data-group-preferred": g.preferred_host || "", "data-group-leader-host": g.leader_host || ""},
        el("span", {"class": "group-name"}, "group " + g.index),
        ok ? el("span", {"class": "group-leader"}, "★ leader " + shown(g.leader))
           : el("span", {"class": "group-noleader"}, "✕ no leader"),
        g.preferred_host && ok
          ? el("span", {"class": "group-placement" + (onPreferred ? "" : " away"), "title": g.placement || ""},
              onPreferred ? "on its preferred host " + g.preferred_host
                          : "on host " + g.leader_host + ", preferred host " + g.preferred_host)
          : null,
        el("span", {"class": "group-quorum"},
          g.running + " of " + g.stores.length + " running, quorum " + g.quorum +
          (g.running >= g.quorum ? "" : " — no quorum")),
        g.active_level
          ? el("span", {"class": "group-level", "data-group-level": g.active_level,
                        "title": (g.level_held_by || []).map(shown).join("\n")},
              "format level " + g.active_level + ((g.level_held_by || []).length ? " (upgrade not finished)" : ""))
          : null,
        g.confirms === false && ok
          ? el("span", {"class": "group-noleader"}, "✕ confirms nothing: intragroup " + v.intragroup + " needs every store")
          : null);
    });
    (v.policy_mismatch || []).forEach((m) => {
      groups.push(el("div", {"class": "policy-mismatch", "role": "alert"},
        "⚠ runs another policy than the deployment file: " + shown(m)));
    });
    fill("groups", groups);
  }

  function renderAnalysis(v) {
    const a = v.analysis;
    const down = new Set(v.hosts.filter((h) => h.state === "down").map((h) => h.name));
    const behaviours = ["any", "majority", "all-active", "all"];
    const groups = a.host_losses.length ? a.host_losses[0].groups : [];
    const head = [
      el("tr", {},
        el("th", {"scope": "col", "rowspan": 2}, "if this host is lost"),
        el("th", {"scope": "col", "rowspan": 2}, "its stores stop"),
        groups.length ? el("th", {"scope": "colgroup", "colspan": groups.length, "class": "span"}, "each group") : null,
        el("th", {"scope": "colgroup", "colspan": behaviours.length, "class": "span"}, "publishing, by intergroup stability")),
      el("tr", {},
        groups.map((g) => el("th", {"scope": "col", "class": groupClass(g.group)}, "group " + g.group)),
        behaviours.map((b) => el("th", {"scope": "col", "class": b === a.intergroup ? "configured" : ""},
          b, b === a.intergroup ? el("span", {"class": "cfg"}, " (configured)") : null))),
    ];
    const rows = a.host_losses.map((l) => el("tr", {"data-loss": l.host, "class": down.has(l.host) ? "now" : ""},
      el("th", {"scope": "row"}, "host " + l.host, down.has(l.host) ? el("span", {"class": "badge now"}, "down now") : null),
      el("td", {}, l.stores_lost.join(", ") || "none"),
      l.groups.map((g) => el("td", {"class": g.has_quorum && g.confirms !== false ? "yes" : "no"},
        (g.has_quorum ? "✓ keeps quorum" : "✕ loses quorum") + " (" + g.stores_left + " of " + g.stores + " left)" +
        (g.has_quorum && g.confirms === false ? ", ✕ confirms nothing under intragroup " + a.intragroup : ""))),
      behaviours.map((b) => {
        const on = l.publishing[b];
        return el("td", {"class": (on ? "yes" : "no") + (b === a.intergroup ? " configured" : "")}, on ? "✓ goes on" : "✕ stops");
      })));
    const rule = "with intergroup " + a.intergroup + (a.intragroup ? " and intragroup " + a.intragroup : "");
    const verdict = a.survives_any_host_loss
      ? "Verdict: " + rule + ", publishing goes on whichever single host is lost."
      : "Verdict: " + rule + ", losing some single host stops publishing.";
    fill("analysis",
      el("table", {"class": "analysis"}, el("thead", {}, head), el("tbody", {}, rows)),
      el("p", {"class": "verdict " + (a.survives_any_host_loss ? "yes" : "no")}, verdict),
      a.warnings.length ? el("ul", {"class": "warnings"}, a.warnings.map((w) => el("li", {}, "⚠ " + w))) : null);
  }

  function repairText(g) {
    if (!g.repair) {
      return g.leader
        ? ["— runs on " + shown(g.leader), "intergroup repair runs on the group's leader, " + shown(g.leader) + ", in another process"]
        : ["— no leader", "intergroup repair runs on the group's leader; the group has none"];
    }
    const r = g.repair;
    let t = r.pending_messages > 0 ? "↻ " + num(r.pending_messages) + " missing" : "✓ up to date";
    const more = [];
    if (r.repaired_messages) more.push(num(r.repaired_messages) + " repaired");
    if (r.conflicts) more.push("⚠ " + num(r.conflicts) + " conflicts");
    if (more.length) t += " · " + more.join(" · ");
    return [t, (r.passes || 0) + " passes" + (r.last_error ? "; last error: " + shown(r.last_error) : "")];
  }

  function renderSources(v) {
    const rows = [];
    for (const g of v.groups) {
      const [repair, repairTitle] = repairText(g);
      g.sources.forEach((s, i) => {
        rows.push(el("tr", {"data-group": g.index, "data-source": shown(s.name)},
          i === 0 ? el("th", {"scope": "row", "rowspan": g.sources.length, "class": "grp"},
            el("span", {"class": "gchip " + groupClass(g.index)}, "group " + g.index),
            el("div", {"class": "held"}, "as held by " + g.sources_from + (g.leader ? "" : " (no leader)"))) : null,
          el("td", {"class": "src"}, shown(s.name)),
          el("td", {"class": "n"}, num(s.high_seq)),
          el("td", {"class": "n"}, num(s.oldest_seq)),
          el("td", {"class": "n"}, num(s.count)),
          el("td", {"class": "n " + (s.gaps ? "no" : "")}, s.gaps ? "⚠ " + num(s.gaps) : "0"),
          el("td", {"class": "n " + (s.conflicts ? "no" : ""), "title": s.conflicts ? "another group holds other payloads for these sequence numbers; receivers get the lowest group's" : ""},
            s.conflicts ? "⚠ " + num(s.conflicts) : "0"),
          i === 0 ? el("td", {"rowspan": g.sources.length, "title": repairTitle, "class": "repair"}, repair) : null));
      });
    }
    const missing = v.groups.filter((g) => g.sources.length === 0).map((g) => "group " + g.index);
    const note = missing.length
      ? el("p", {"class": "meta"}, list(missing) + ": no sources " +
          (rows.length ? "known (no store of the group answered with its sources, or it holds none)." : "yet. Publish with umpub to see them here."))
      : null;
    fill("sources",
      rows.length ? el("table", {"class": "sources"},
        el("thead", {}, el("tr", {},
          ["group", "source", "highest", "oldest retained", "messages", "gaps", "conflicts", "repair"].map((h) => el("th", {"scope": "col"}, h)))),
        el("tbody", {}, rows)) : null,
      note);
  }

  // renderReceivers lists each source's named (durable) receivers as its
  // group records them: the last message consumed, the lag behind the
  // source's highest, whether registered and paced, the last activity.
  function renderReceivers(v) {
    const rows = [];
    for (const g of v.groups) {
      for (const s of g.sources) {
        for (const rc of (s.receivers || [])) {
          const state = (rc.active ? "active" : "expired") + (rc.paced ? ", paced" : "");
          rows.push(el("tr", {"data-group": g.index, "data-source": shown(s.name), "data-receiver": shown(rc.name)},
            el("td", {}, el("span", {"class": "gchip " + groupClass(g.index)}, "group " + g.index)),
            el("td", {"class": "src"}, shown(s.name) + (s.pacing ? " (" + shown(s.pacing) + " RPP)" : "")),
            el("td", {"class": "src"}, shown(rc.name)),
            el("td", {"class": "n"}, num(rc.consumed)),
            el("td", {"class": "n"}, num(rc.lag)),
            el("td", {"class": rc.active ? "" : "no"}, state),
            el("td", {}, rc.last_activity ? shown(rc.last_activity) : "—")));
        }
      }
    }
    fill("receivers",
      rows.length ? el("table", {"class": "sources"},
        el("thead", {}, el("tr", {},
          ["group", "source", "receiver", "consumed", "lag", "state", "last activity"].map((h) => el("th", {"scope": "col"}, h)))),
        el("tbody", {}, rows))
        : el("p", {"class": "meta"}, "No named receivers. umrcv --name NAME records what it consumed here."));
  }

  function render(v) {
    renderHeader(v);
    renderHosts(v);
    renderAnalysis(v);
    renderSources(v);
    renderReceivers(v);
  }

  function connected() {
    lastOK = new Date();
    lostSince = null;
    document.body.dataset.connection = "ok";
    $("banner").hidden = true;
    const u = $("updated");
    u.textContent = "updated " + clock(lastOK);
    u.dataset.updated = lastOK.toISOString();
  }

  function lost(why) {
    if (!lostSince) lostSince = new Date();
    document.body.dataset.connection = "lost";
    const b = $("banner");
    b.hidden = false;
    b.replaceChildren(
      el("strong", {}, "⚠ Connection lost"),
      " — the daemon at " + location.host + " has not answered since " + clock(lostSince) +
      " (" + why + "). " + (lastOK ? "Showing the state of " + clock(lastOK) + "; " : "") + "retrying every second.");
  }

  async function poll() {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    let v = null;
    try {
      const r = await fetch("/v1/deployment", {cache: "no-store", signal: ctl.signal});
      if (!r.ok) throw new Error("HTTP " + r.status);
      v = await r.json();
    } catch (e) {
      lost(e && e.name === "AbortError" ? "no answer within " + TIMEOUT_MS / 1000 + " s" : (e && e.message) || "error");
    } finally {
      clearTimeout(timer);
      setTimeout(poll, POLL_MS);
    }
    if (v) {
      render(v);  // a drawing bug shows in the console, not as a lost connection
      connected();
    }
  }

  poll();
})();
