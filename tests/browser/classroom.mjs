// SPDX-License-Identifier: BSD-3-Clause
// classroom.mjs - the race classroom page in a real browser: Debian's
// chromium, headless, driven by puppeteer-core (no browser download).
//
//   node classroom.mjs --chromium PATH --races FILE --races-text FILE
//        --explore FILE --explore-text FILE --doc doc/races.md --out DIR
//
// It opens each page from file://, steps through two races with the
// keyboard and checks, at every step, the lanes, the command boxes and
// the key's value and TTL against three things that must agree: the
// JSON the page embeds, the DOM the page drew from it, and the text the
// same run printed (tslock replay's narration, tests/explore's numbered
// steps), parsed here on its own.  It checks that the page asks for no
// resource beyond its own file, that each race links to a section of
// doc/races.md that exists, and saves screenshots (colour and
// achromatopsia) to DIR.  Exit status 1 on any failure.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import puppeteer from "puppeteer-core";

const args = {};
for (let i = 2; i < process.argv.length; i += 2)
  args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
for (const need of ["chromium", "races", "races-text", "explore",
                    "explore-text", "doc", "out"])
  if (!args[need]) {
    console.error(`classroom.mjs: missing --${need}`);
    process.exit(2);
  }

let failures = 0, checks = 0, quiet = false;
function check(ok, what) {
  checks++;
  if (!ok) {
    failures++;
    if (!quiet) console.log(`FAIL: ${what}`);
  }
  return ok;
}

// The checks must be able to fail: run fn on something known wrong and
// demand that it fails, without counting those failures.
async function mustCatch(what, fn) {
  const before = failures;
  quiet = true;
  try {
    await fn();
  } finally {
    quiet = false;
  }
  const caught = failures - before;
  failures = before;
  check(caught > 0, `the checks catch ${what}`);
}
function same(got, want, what) {
  return check(JSON.stringify(got) === JSON.stringify(want),
               `${what}: got ${JSON.stringify(got)}, ` +
               `want ${JSON.stringify(want)}`);
}

// The page words a PTTL so; worded here again, not taken from the page.
function ttlText(p) {
  if (p === null) return "TTL unknown";
  if (p === -1) return "no TTL";
  if (p === -2) return "no key";
  return `TTL ${p} ms`;
}

// A stamp as the page should show it: ms since the side's start.
function stampText(v, start) {
  let ms = null;
  if (/^\d{13}$/.test(v)) ms = Number(v);
  else if (/^\d{10}(\.\d+)?$/.test(v)) ms = Math.round(parseFloat(v) * 1000);
  if (ms === null || start === null || start === undefined ||
      Math.abs(ms - start) > 2 * 86400000)
    return null;
  const rel = ms - start;
  return `= t${rel >= 0 ? "+" : ""}${(rel / 1000).toFixed(3)} s`;
}

// GitHub's heading anchors: lower case, punctuation dropped, spaces to -.
function slug(heading) {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}
const anchors = new Set(readFileSync(args.doc, "utf8").split("\n")
  .filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, ""))));

// ---------------------------------------------- the text dumps, parsed

// tslock replay: "race X: title", "broken (...), on KEY:", numbered
// steps "  N. ACTOR COMMAND -> VALUE  [TTL n ms]", then the verdicts.
function parseReplay(text) {
  const races = [];
  let race = null, side = null, inVerdict = false;
  for (const line of text.split("\n")) {
    let m;
    if ((m = /^race (\S+): (.*)$/.exec(line))) {
      race = { id: m[1], title: m[2], sides: [], verdicts: [] };
      races.push(race);
      inVerdict = false;
    } else if (race && (m = /^(broken|tslock) \((.*)\), on \S+:$/.exec(line))) {
      side = { steps: [] };
      race.sides.push(side);
    } else if (race && line === "verdict:") {
      inVerdict = true;
    } else if (race && inVerdict &&
               (m = /^  (broken|tslock) \((.*?)\): (.*)$/.exec(line))) {
      race.verdicts.push(m[3]);
    } else if (side && (m = /^ +(\d+)\. (.*)$/.exec(line))) {
      const rest = m[2];
      const arrow = rest.indexOf(" -> ");
      const head = rest.slice(0, arrow);
      let value = rest.slice(arrow + 4), ttl = null;
      const t = /^(.*)  \[TTL (\d+) ms\]$/.exec(value);
      if (t) { value = t[1]; ttl = Number(t[2]); }
      const sp = head.indexOf(" ");
      side.steps.push({ n: Number(m[1]), actor: head.slice(0, sp),
                        command: head.slice(sp).trim(), value, ttl });
    }
  }
  return races;
}

// tests/explore: blocks of "  N. ACTOR WHAT -> VALUE  (NOTE)".
function parseExplore(text) {
  const blocks = [];
  let cur = null;
  for (const line of text.split("\n")) {
    const m = /^ +(\d+)\. (\S+) +(.*?) +-> (.*)$/.exec(line);
    if (!m) { cur = null; continue; }
    if (Number(m[1]) === 1 || cur === null) { cur = []; blocks.push(cur); }
    let value = m[4], note = null;
    const t = /^(.*?)  \((.*)\)$/.exec(value);
    if (t) { value = t[1]; note = t[2]; }
    cur.push({ actor: m[2], command: m[3], value, note });
  }
  return blocks;
}

// ---------------------------------------------------------- the browser

const userDataDir = mkdtempSync(join(tmpdir(), "tslock-chromium-"));
const browser = await puppeteer.launch({
  executablePath: args.chromium,
  headless: true,
  userDataDir,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-default-apps", "--disable-extensions"],
});

async function open(file, hash) {
  const page = await browser.newPage();
  const requests = [];
  const errors = [];
  page.on("request", (r) => requests.push(r.url()));
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  await page.setViewport({ width: 1280, height: 720 });
  const url = "file://" + resolve(file);
  await page.goto(url + (hash || ""), { waitUntil: "load" });
  await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
  return { page, requests, errors, url };
}

// What the page shows of the visible scene, read from the DOM alone.
async function shown(page) {
  return page.evaluate(() => {
    const scene = [...document.querySelectorAll("section.scene")]
      .find((s) => !s.hidden);
    const text = (e) => e ? e.textContent : null;
    return {
      id: scene.getAttribute("data-scene"),
      step: Number(scene.getAttribute("data-step")),
      position: text(scene.querySelector(".position")),
      doc: scene.querySelector("a.doc").getAttribute("href"),
      sides: [...scene.querySelectorAll("section.side")].map((side) => ({
        lanes: [...side.querySelectorAll("thead th.lane")]
          .map((th) => th.getAttribute("data-lane")),
        laneNames: [...side.querySelectorAll("thead th.lane")]
          .map((th) => th.textContent),
        keyNow: text(side.querySelector(".keynow .value")),
        ttlNow: text(side.querySelector(".keynow .ttl")),
        verdict: text(side.querySelector(".verdict")),
        rows: [...side.querySelectorAll("tbody tr.step")].map((tr) => {
          const cells = [...tr.querySelectorAll("td.lane")].map((td) => {
            const cmd = td.querySelector(".cmd");
            if (!cmd) return null;
            // The command is the box's own text, not its note or flag.
            let own = "";
            cmd.childNodes.forEach((n) => {
              if (n.nodeType === Node.TEXT_NODE) own += n.textContent;
            });
            return { lane: td.getAttribute("data-lane"), command: own,
                     note: text(cmd.querySelector(".note")),
                     flag: text(cmd.querySelector(".flag")) };
          });
          return {
            shown: tr.getAttribute("data-shown") === "true",
            current: tr.classList.contains("current"),
            visible: getComputedStyle(tr.querySelector("td.key .value"))
              .visibility === "visible",
            cells: cells.filter((c) => c !== null),
            value: text(tr.querySelector("td.key .value")),
            ttl: text(tr.querySelector("td.key .ttl")),
            stamp: text(tr.querySelector("td.key .stamp")),
            clock: text(tr.querySelector("td.key .clock")),
          };
        }),
      })),
    };
  });
}

// One step of the visible scene, checked side by side against the JSON.
function checkStep(view, scene, where) {
  same(view.id, scene.id, `${where}: the scene shown`);
  view.sides.forEach((sv, k) => {
    const side = scene.sides[k];
    const n = side.steps.length;
    const upto = Math.min(view.step, n);
    same(sv.lanes, side.lanes, `${where} side ${k}: the lanes`);
    same(sv.rows.length, n, `${where} side ${k}: a row per step`);
    sv.rows.forEach((row, i) => {
      const st = side.steps[i];
      const w = `${where} side ${k} row ${i + 1}`;
      check(row.shown === i < upto && row.visible === i < upto,
            `${w}: shown only once stepped to`);
      check(row.current === (i === upto - 1), `${w}: current marker`);
      same(row.cells.map((c) => [c.lane, c.command]),
           [[st.actor, st.command]], `${w}: one box, in ${st.actor}'s lane`);
      same(row.value, st.value, `${w}: the key's value`);
      same(row.ttl, ttlText(st.pttl), `${w}: the key's TTL`);
      same(row.stamp, stampText(st.value, side.start), `${w}: the stamp`);
      same(row.clock, st.clock === null ? null
           : `now t${st.clock >= 0 ? "+" : ""}${(st.clock / 1000).toFixed(3)} s`,
           `${w}: the clock`);
      const flag = row.cells[0] ? row.cells[0].flag : null;
      same(flag, i !== side.mark ? null
                 : side.broken ? "\u2716 BREAKS HERE" : "\u2714 HOLDS HERE",
           `${w}: the marked step, in words`);
    });
    const last = upto > 0 ? side.steps[upto - 1] : null;
    same(sv.keyNow, last ? last.value : "(before the first step)",
         `${where} side ${k}: the key now`);
    same(sv.ttlNow, last ? ttlText(last.pttl) : "",
         `${where} side ${k}: its TTL now`);
    if (view.step >= n)
      check(sv.verdict.includes(side.verdict) &&
            sv.verdict.startsWith(side.broken ? "\u2716" : "\u2714"),
            `${where} side ${k}: the verdict, "${sv.verdict}"`);
    else
      check(!sv.verdict.includes(side.verdict),
            `${where} side ${k}: no verdict before the end`);
  });
}

// Step the visible scene from 0 to its end with the arrow key, then one
// back; checks every step.
async function stepThrough(page, data, name) {
  let view = await shown(page);
  const scene = data.scenes.find((s) => s.id === view.id);
  const max = Math.max(...scene.sides.map((s) => s.steps.length));
  for (let s = view.step; s > 0; s--) await page.keyboard.press("ArrowLeft");
  for (let s = 0; s <= max; s++) {
    view = await shown(page);
    same(view.step, s, `${name} ${scene.id}: step after ${s} presses`);
    same(view.position, `Step ${s} of ${max}`, `${name} ${scene.id}: position`);
    checkStep(view, scene, `${name} ${scene.id} step ${s}`);
    await page.keyboard.press("ArrowRight");
  }
  view = await shown(page);
  same(view.step, max, `${name} ${scene.id}: no step past the end`);
  await page.keyboard.press("ArrowLeft");
  view = await shown(page);
  same(view.step, max - 1, `${name} ${scene.id}: the left arrow steps back`);
  checkStep(view, scene, `${name} ${scene.id} back at ${max - 1}`);
  return scene;
}

// The page itself is the one file read; data: URLs (the grey filter of
// the achromatopsia screenshot) read nothing.
function checkNetwork(opened, name) {
  const foreign = opened.requests.filter((u) =>
    u.split("#")[0] !== opened.url && !u.startsWith("data:"));
  same(foreign, [], `${name}: no resource beyond the page itself`);
  check(opened.requests.length >= 1, `${name}: requests were watched`);
  same(opened.errors, [], `${name}: no script errors`);
}

function checkLinks(data, name) {
  for (const sc of data.scenes) {
    const m = /races\.md#(.+)$/.exec(sc.doc);
    check(m && anchors.has(m[1]),
          `${name} ${sc.id}: links to a section of doc/races.md (${sc.doc})`);
  }
}

// The page's JSON against the narration of the same run.
function compareDump(data, dump) {
  same(data.scenes.map((s) => s.id), dump.map((r) => r.id),
       "races: a scene per race narrated");
  for (const r of dump) {
    const sc = data.scenes.find((s) => s.id === r.id);
    if (!check(sc, `race ${r.id} on the page`)) continue;
    same(sc.title, r.title, `race ${r.id}: title`);
    same(sc.sides.map((s) => s.verdict), r.verdicts, `race ${r.id}: verdicts`);
    r.sides.forEach((ts, k) => {
      const js = sc.sides[k];
      same(js.steps.map((s) => [s.actor, s.command, s.value,
                                s.pttl >= 0 ? s.pttl : null]),
           ts.steps.map((s) => [s.actor, s.command, s.value, s.ttl]),
           `race ${r.id} side ${k}: the steps, as narrated`);
      // The lanes: every actor, in the order it first acts.
      same(js.lanes, [...new Set(ts.steps.map((s) => s.actor))],
           `race ${r.id} side ${k}: the lanes`);
      check(js.documented && js.mark >= 0 && js.mark < js.steps.length,
            `race ${r.id} side ${k}: documented, with its step marked`);
    });
    check(sc.sides[0].broken && !sc.sides[1].broken,
          `race ${r.id}: broken beside fixed`);
  }
}

// --------------------------------------------------- the races page

{
  const size = readFileSync(args.races).length;
  check(size < 300 * 1024, `races page under 300 KB (${size} bytes)`);
  const html = readFileSync(args.races, "utf8");
  check(!/\b(src|href)\s*=\s*["']?(https?:)?\/\//i.test(html),
        "races page: no address of another host in src or href");
  const opened = await open(args.races);
  const { page } = opened;
  const data = await page.evaluate(() =>
    JSON.parse(document.getElementById("tslock-data").textContent));
  const dump = parseReplay(readFileSync(args["races-text"], "utf8"));

  // The JSON against the narration the same run printed.
  compareDump(data, dump);
  await mustCatch("a value the narration did not print", () => {
    const bad = structuredClone(dump);
    bad[0].sides[0].steps[1].value += "0";
    compareDump(data, bad);
  });
  await mustCatch("a verdict the page does not give", () => {
    const bad = structuredClone(dump);
    bad[1].verdicts[1] = "nobody holds it";
    compareDump(data, bad);
  });
  checkLinks(data, "races");

  // Two races with the keyboard: the first, then down to race d.
  await stepThrough(page, data, "races");
  // The DOM checks catch a page that shows other than its data.
  await mustCatch("a key value drawn wrong", async () => {
    await page.evaluate(() => {
      document.querySelector("section.scene:not([hidden]) tbody tr.step " +
                             "td.key .value").textContent = "1234";
    });
    checkStep(await shown(page), data.scenes[0], "tampered");
  });
  await mustCatch("a box in the wrong lane", async () => {
    await page.evaluate(() => {
      const row = document.querySelector("section.scene:not([hidden]) " +
                                         "tbody tr.step");
      const box = row.querySelector(".cmd");
      const to = [...row.querySelectorAll("td.lane")]
        .find((c) => !c.contains(box));
      to.appendChild(box);
    });
    checkStep(await shown(page), data.scenes[0], "tampered");
  });
  // Drawn afresh from its data, the page is right again.
  await page.reload({ waitUntil: "load" });
  await page.waitForSelector("body[data-ready=true]", { timeout: 10000 });
  const again = await shown(page);
  same(again.step, 0, "races: a reload starts at step 0");
  checkStep(again, data.scenes[0], "races after a reload");
  for (let i = 0; i < 3; i++) await page.keyboard.press("ArrowDown");
  same((await shown(page)).id, "d", "races: the down arrow reaches race d");
  await stepThrough(page, data, "races");
  await page.keyboard.press("ArrowUp");
  same((await shown(page)).id, "c", "races: the up arrow goes back a race");

  // Space plays and pauses.
  await page.keyboard.press("Home");
  await page.keyboard.press(" ");
  await new Promise((r) => setTimeout(r, 1700));
  const playing = await page.evaluate(() =>
    document.body.getAttribute("data-playing"));
  await page.keyboard.press(" ");
  const afterPlay = await shown(page);
  check(playing === "true" && afterPlay.step >= 1,
        `races: space plays (step ${afterPlay.step})`);
  const paused = afterPlay.step;
  await new Promise((r) => setTimeout(r, 1700));
  same((await shown(page)).step, paused, "races: space pauses");

  // The screenshot of race a at its end, in colour and without colour.
  for (let i = 0; i < 3; i++) await page.keyboard.press("ArrowUp");
  await page.keyboard.press("End");
  await page.screenshot({ path: join(args.out, "classroom-races.png") });
  await page.emulateVisionDeficiency("achromatopsia");
  await page.screenshot({ path: join(args.out, "classroom-races-bw.png") });
  await page.emulateVisionDeficiency("none");
  // Projector and wall screen: the page fits its width.
  for (const [w, h] of [[1024, 768], [1920, 1080]]) {
    await page.setViewport({ width: w, height: h });
    const wide = await page.evaluate(() =>
      document.documentElement.scrollWidth);
    check(wide <= w, `races: no sideways scrolling at ${w}x${h} (${wide})`);
  }
  checkNetwork(opened, "races");
  await page.close();
}

// ------------------------------------------------- the explorer page

{
  const opened = await open(args.explore);
  const { page } = opened;
  const data = await page.evaluate(() =>
    JSON.parse(document.getElementById("tslock-data").textContent));
  const blocks = parseExplore(readFileSync(args["explore-text"], "utf8"));
  check(data.scenes.length > 0, "explore: some counterexamples");
  for (const sc of data.scenes) {
    sc.sides.forEach((side, k) => {
      const want = JSON.stringify(side.steps.map((s) =>
        [s.actor, s.command, s.value, s.note]));
      check(blocks.some((b) => JSON.stringify(b.map((s) =>
              [s.actor, s.command, s.value, s.note])) === want),
            `explore ${sc.id} side ${k}: the steps, as tests/explore ` +
            `printed them`);
      if (side.broken)
        same(side.mark, side.steps.length - 1,
             `explore ${sc.id} side ${k}: marked where it broke, at its end`);
    });
  }
  // The classic release's gap beside the WATCH form on the same schedule.
  const gap = data.scenes.find((s) => s.sides.length === 2 &&
    /timestamp-classic/.test(s.sides[0].label));
  if (check(gap, "explore: the classic gap beside the WATCH form")) {
    check(gap.sides[0].broken && !gap.sides[1].broken &&
          /timestamp-watch/.test(gap.sides[1].label),
          "explore: the classic form breaks, the WATCH form holds");
    const at = gap.sides[0].mark;
    same(gap.sides[1].steps.slice(0, at).map((s) => s.actor),
         gap.sides[0].steps.slice(0, at).map((s) => s.actor),
         "explore: the same schedule up to the break");
  }
  checkLinks(data, "explore");
  await stepThrough(page, data, "explore");
  await page.keyboard.press("End");
  await page.screenshot({ path: join(args.out, "classroom-explore.png"),
                         fullPage: true });
  checkNetwork(opened, "explore");
  await page.close();
}

await browser.close();
rmSync(userDataDir, { recursive: true, force: true });
console.log(`classroom: ${checks} checks, ${failures} failed; screenshots ` +
            `in ${args.out}`);
process.exit(failures > 0 ? 1 : 0);
