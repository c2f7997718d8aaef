// The matcher of `fixer explain`, ported to the browser: parse a pasted traceback, extract its
// evidence, normalise its message and rank the KB entries exactly as fixer/explain/match.py does.
//
// All data (entries, their parsed examples, scoring constants and every regex, translated from
// Python's dialect) comes from assets/fixer-kb.js, written at build time from fixer/output/export.py.
// No dependencies; a classic script (module scripts do not load from file://, where a copy of the site
// opened from disk runs), so it sets `globalThis.fixerMatch` and runs alike in a browser and under Node.
// Pasted text is only ever read: nothing here evaluates it or turns it into HTML.

(() => {

const cache = new Map();

function rx(source, flags) {
  const key = flags + "\u0000" + source;
  let compiled = cache.get(key);
  if (!compiled) {
    compiled = new RegExp(source, flags);
    cache.set(key, compiled);
  }
  return compiled;
}

// re.search / re.match / re.fullmatch / re.sub / re.findall on translated sources.
function search(source, text) {
  return rx(source, "u").exec(text);
}

/** re.search under IGNORECASE: a message typed again in another case (see Matcher._best_signature). */
function searchFolded(source, text) {
  return rx(source, "iu").exec(text);
}

function matchAt(source, text) {
  const re = rx(source, "uy");
  re.lastIndex = 0;
  return re.exec(text);
}

function fullmatch(source, text) {
  const re = rx("(?:" + source + ")$", "uy");
  re.lastIndex = 0;
  return re.exec(text);
}

function sub(source, text, replace) {
  return text.replace(rx(source, "gu"), replace);
}

function findall(source, text) {
  return Array.from(text.matchAll(rx(source, "gu")), (m) => m[0]);
}

function group(m, name) {
  return m && m.groups && m.groups[name] !== undefined ? m.groups[name] : null;
}

// Python's str.strip() / isspace(), int() on Unicode digits and round() (half to even).
function isSpace(data, ch) {
  return ch.length > 0 && fullmatch(data.patterns.space.source, ch) !== null;
}

function strip(data, text) {
  const space = data.patterns.space.source;
  return text.replace(rx("^" + space + "+|" + space + "+$", "gu"), "");
}

function rstrip(data, text) {
  return text.replace(rx(data.patterns.space.source + "+$", "u"), "");
}

function firstChar(text) {
  return text.length ? String.fromCodePoint(text.codePointAt(0)) : "";
}

function pyInt(digits) {
  let value = 0;
  for (const ch of digits) {
    let code = ch.codePointAt(0);
    let zero = code;
    while (zero > 0 && /\p{Nd}/u.test(String.fromCodePoint(zero - 1)) && code - zero < 9) zero -= 1;
    value = value * 10 + ((code - zero) % 10);
  }
  return value;
}

function roundHalfEven(x) {
  const floor = Math.floor(x);
  const rest = x - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Python's `text[:n]`: the first n code points. */
function codePoints(text, n) {
  return text.length <= n ? text : Array.from(text).slice(0, n).join("");
}

/** parse._line_number: digits past nine name no line of any file. */
function lineNumber(digits) {
  return digits && Array.from(digits).length <= 9 ? pyInt(digits) : null;
}

function rsplitLast(text, sep) {
  const at = text.lastIndexOf(sep);
  return at < 0 ? text : text.slice(at + sep.length);
}

// ---- libraries.py -------------------------------------------------------------------------------

function normalisePath(path) {
  return path.replaceAll("\\", "/");
}

function libraryOf(data, path) {
  const p = data.patterns;
  const norm = normalisePath(path);
  const installed = rx(p.install_root.source, "du").exec(norm);
  if (installed) {
    const root = installed[1];
    if (root === "torch") return torchArea(data, norm.slice(installed.indices[1][0]));
    return root;
  }
  if (search(p.stdlib.source, norm)) return "python";
  const checkout = rx(p.torch_checkout.source, "du").exec(norm);
  if (checkout) return torchArea(data, norm.slice(checkout.indices[1][0]));
  return null;
}

function torchArea(data, fromTorch) {
  const sub = matchAt(data.patterns.torch_source.source, fromTorch);
  if (sub && data.torch_subpackages.includes(sub[1])) return "torch." + sub[1];
  if (fromTorch.startsWith("torch/serialization.py")) return "torch.serialization";
  return "torch";
}

// ---- parse.py -----------------------------------------------------------------------------------

const CURLY = { "\u2018": "'", "\u2019": "'", "\u201b": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"' };

/** fixer/explain/read.py: undo what pasting did to a traceback. */
function clean(data, text) {
  const p = data.patterns;
  text = sub(p.ansi.source, text, "");
  text = sub(p.ansi_leftover.source, text, "");
  const unified = text.replaceAll("\r\n", "\n").replaceAll("\r", "\n");
  text = sub(p.link.source, linkedHeaders(data, unified.split("\n")).join("\n"), (_m, inner) => inner);
  text = text.normalize("NFKC").replace(/[\u2018\u2019\u201b\u2032\u201c\u201d\u201e\u2033]/gu, (c) => CURLY[c]);
  let lines = unboxed(data, unquoted(data, text.split("\n")));
  lines = unwrapped(data, withoutLogPrefixes(data, lines));
  return rejoinedCode(data, rejoinedHeaders(data, lines))
    .flatMap((line) => splitRunTogether(data, line))
    .join("\n");
}

/** read.py's _linked_headers: a cut frame header put back from the links on its numbered lines. */
function linkedHeaders(data, lines) {
  const p = data.patterns;
  const out = [];
  let named = null;
  lines.forEach((line, i) => {
    const link = matchAt(p.numbered_link.source, line);
    if (!link) {
      const header = matchAt(p.file_header.source, line);
      let found = null;
      if (header) {
        const name = rx(p.file_name.source, "gu");
        name.lastIndex = header[0].length;
        found = name.exec(line);
      }
      named = found ? group(found, "name") : named;
    } else if (fileName(group(link, "path")) !== named) {
      const path = group(link, "path");
      named = fileName(path);
      let failing = link;
      for (let j = i; j < lines.length; j++) {
        const found = matchAt(p.numbered_link.source, lines[j]);
        if (!found || group(found, "path") !== path) break;
        if (group(found, "arrow")) {
          failing = found;
          break;
        }
      }
      out.push(`File "${path}", line ${group(failing, "line")}`);
    }
    out.push(line);
  });
  return out;
}

function fileName(path) {
  return rsplitLast(normalisePath(path), "/");
}

/** read.py's _unquoted: reply marks go when most lines carry them, then the common indentation. */
function unquoted(data, lines) {
  for (const mark of data.patterns.quote_marks) {
    const nonblank = lines.filter((line) => strip(data, line));
    if (nonblank.length && nonblank.filter((line) => matchAt(mark.source, line)).length * 2 > nonblank.length) {
      lines = lines.map((line) => line.replace(rx(mark.source, "u"), ""));
    }
  }
  return dedent(lines);
}

/** read.py's _unboxed: a rich.traceback box as the traceback Python prints. */
function unboxed(data, lines) {
  const p = data.patterns;
  if (!lines.some((line) => matchAt(p.box_top.source, line))) return lines;
  const out = [];
  let inside = false;
  let inSource = false;
  let full = false;
  let header = "";
  for (const line of lines) {
    if (!inside) {
      inside = Boolean(matchAt(p.box_top.source, line));
      out.push(inside ? "Traceback (most recent call last):" : line);
      continue;
    }
    if (matchAt(p.box_bottom.source, line)) {
      inside = inSource = false;
      header = "";
      continue;
    }
    const row = matchAt(p.box_row.source, line);
    const text = row ? group(row, "text") : "";
    const wasFull = row ? [...group(row, "pad")].length <= 1 : false;
    if (!text) {
      inSource = Boolean(header) && !inSource;
      continue;
    }
    if ("╭│╰".includes(firstChar(text)) || text.startsWith("... ")) continue;
    if (inSource) {
      const source = matchAt(p.box_source.source, text);
      if (source && group(source, "arrow")) {
        out.push(frameLine(data, header), "    " + strip(data, (group(source, "code") || "").replaceAll("│", " ")));
        header = "";
      }
    } else {
      header = headerContinued(data, header, text, full);
    }
    full = wasFull;
  }
  return out;
}

/** read.py's _header_continued: a frame header row joined to the rows before it. */
function headerContinued(data, header, text, cutMidWord) {
  if (!header) return text;
  const beforeIn = search(data.patterns.box_line_end.source, header) && text.startsWith("in ");
  const atASpace = !cutMidWord || header.endsWith(" in") || beforeIn;
  return header + (atASpace ? " " : "") + text;
}

function frameLine(data, header) {
  const frame = fullmatch(data.patterns.box_frame.source, header);
  if (!frame) return `  File "${header}", line 0`;
  return `  File "${group(frame, "path")}", line ${group(frame, "line")}, in ${group(frame, "function")}`;
}

/** Python's textwrap.dedent: blank out whitespace-only lines, drop the indentation all others share. */
function dedent(lines) {
  lines = lines.map((line) => (/^[ \t]+$/.test(line) ? "" : line));
  let margin = null;
  for (const line of lines) {
    if (!line) continue;
    const indent = line.match(/^[ \t]*/)[0];
    if (margin === null) {
      margin = indent;
      continue;
    }
    let i = 0;
    while (i < margin.length && i < indent.length && margin[i] === indent[i]) i++;
    margin = margin.slice(0, i);
  }
  return margin ? lines.map((line) => (line.startsWith(margin) ? line.slice(margin.length) : line)) : lines;
}

function stripPrefixes(data, line) {
  let stripped = false;
  for (;;) {
    const found = matchAt(data.patterns.log_prefix.source, line);
    if (!found || !found[0]) return [line, stripped];
    line = line.slice(found[0].length);
    stripped = true;
  }
}

function withoutLogPrefixes(data, lines) {
  const repaired = lines.map((line) => stripPrefixes(data, line));
  if (repaired.some(([line, stripped]) => stripped && matchAt(data.patterns.traceback_line.source, line))) {
    return repaired.map(([line]) => line);
  }
  return lines;
}

/** read.py's _rejoined_headers: a frame header wrapped at spaces, joined back from up to HEADER_ROWS lines. */
function rejoinedHeaders(data, lines) {
  const p = data.patterns;
  const out = [];
  let i = 0;
  while (i < lines.length) {
    let line = lines[i];
    i += 1;
    const begun = search(p.header_begun.source, line);
    if (begun) {
      const at = begun.index + (begun[0].startsWith("File") ? 0 : 1); // after the one space before `File`
      let joined = rstrip(data, line);
      const following = lines.slice(i, i + data.constants.HEADER_ROWS - 1);
      for (let taken = 1; taken <= following.length; taken++) {
        const next = strip(data, following[taken - 1]);
        if (!next) break;
        joined = `${joined} ${next}`;
        const whole = rx(p.header_whole.source, "uy");
        whole.lastIndex = at;
        if (whole.exec(joined)) {
          line = joined;
          i += taken;
          break;
        }
      }
    }
    out.push(line);
  }
  return out;
}

/** read.py's _rejoined_code: a frame's code line wrapped at a space, joined back when the flush-left line
 * after it closes exactly the brackets it left open. */
function rejoinedCode(data, lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    let line = lines[i];
    i += 1;
    const after = i < lines.length ? lines[i] : "";
    if (
      out.length &&
      matchAt(data.patterns.header_start.source, out[out.length - 1]) &&
      line.length > 0 &&
      strip(data, line[0]) === "" &&
      continues(data, after) &&
      openBrackets(line) > 0 &&
      openBrackets(line + after) === 0
    ) {
      line = `${rstrip(data, line)} ${strip(data, after)}`;
      i += 1;
    }
    out.push(line);
  }
  return out;
}

function openBrackets(text) {
  let n = 0;
  for (const c of text) n += "([{".includes(c) ? 1 : ")]}".includes(c) ? -1 : 0;
  return n;
}

function splitRunTogether(data, line) {
  const p = data.patterns;
  const frames = [...line.matchAll(rx(p.frame_header.source, "gu"))];
  if (!frames.length) return [line];
  const last = frames[frames.length - 1];
  const head = line.slice(0, frames[0].index);
  const tail = line.slice(last.index + last[0].length);
  const prefix = fullmatch(p.line_prefix.source, head);
  if (frames.length === 1 && prefix && !strip(data, tail)) return [line];
  const keep = prefix ? strip(data, head) : "";
  const pieces = prefix ? [] : [rstrip(data, head)];
  frames.forEach((frame, k) => {
    const end = k + 1 < frames.length ? frames[k + 1].index : line.length;
    pieces.push(`${keep}  ${frame[0]}`);
    const rest = strip(data, line.slice(frame.index + frame[0].length, end));
    const exception = search(p.exception_start.source, rest);
    const code = exception ? strip(data, rest.slice(0, exception.index)) : rest;
    if (code) pieces.push(`${keep}    ${code}`);
    if (exception) pieces.push(`${keep}${keep ? " " : ""}${rest.slice(exception.index)}`);
  });
  return pieces;
}

function mayBeCut(data, line) {
  return Boolean(strip(data, line)) && !fullmatch(data.patterns.ruler.source, line) && !line.includes("Traceback (most recent call last)");
}

function unwrapped(data, lines) {
  const width = cutWidth(data, lines);
  if (width === null) return lines;
  const joined = [];
  let cut = false;
  for (const line of lines) {
    if (cut && continues(data, line)) {
      joined[joined.length - 1] += line;
    } else {
      joined.push(line);
    }
    cut = codeLength(line) === width && mayBeCut(data, line);
  }
  return joined;
}

/** read.py's _cut_width: the longest line's length when another line is as long, or else the length at
 * which two frame headers or more stop with their rest on the next line, flush left. */
function cutWidth(data, lines) {
  const min = data.constants.WRAP_WIDTH_MIN;
  const lengths = lines.filter((line) => mayBeCut(data, line)).map((line) => codeLength(line));
  const width = lengths.length ? Math.max(...lengths) : 0;
  if (width >= min && lengths.filter((n) => n === width).length >= 2) return width;
  const cutHeaders = new Map();
  lines.slice(0, -1).forEach((line, i) => {
    if (matchAt(data.patterns.header_start.source, line) && continues(data, lines[i + 1])) {
      const n = codeLength(line);
      cutHeaders.set(n, (cutHeaders.get(n) || 0) + 1);
    }
  });
  const found = [...cutHeaders].filter(([n, count]) => count >= 2 && n >= min).map(([n]) => n);
  return found.length ? Math.max(...found) : null;
}

/** read.py's _continues: a line that may go on from the one above it. */
function continues(data, line) {
  return Boolean(line) && !matchAt(data.patterns.starts_its_own.source, line);
}

/** Python's len(): code points, not UTF-16 units. */
function codeLength(text) {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

function splitRanks(data, lines) {
  const groups = new Map();
  for (const line of lines) {
    const prefix = matchAt(data.patterns.rank_prefix.source, line);
    const key = prefix ? pyInt(prefix[1]) : null;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(prefix ? line.slice(prefix[0].length) : line);
  }
  return groups;
}

// ---- fixer/explain/tolerant.py: a message cut or retyped, read against the signatures' fixed words --

function tolerantWords(data, text) {
  return findall(data.patterns.tolerant_word.source, text.toLowerCase());
}

function near(a, b) {
  if (a === b || Math.min(a.length, b.length) < 4 || Math.abs(a.length - b.length) > 1) return false;
  if (a.length === b.length) {
    const diff = [];
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) diff.push(i);
    return diff.length === 1 || (diff.length === 2 && diff[1] === diff[0] + 1 && a[diff[0]] === b[diff[1]] && a[diff[1]] === b[diff[0]]);
  }
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  let i = 0;
  while (i < short.length && short[i] === long[i]) i++;
  return short.slice(i) === long.slice(i + 1);
}

/** tolerant.reach: how many of a line's words, from its start, a good alignment to the wording can span. */
function reach(c, wording) {
  const fixed = wording.filter((token) => token !== c.HOLE).length;
  return fixed + Math.floor(c.MAX_COST * fixed) + c.HOLE_SPAN * (wording.length - fixed);
}

/** tolerant.align: [agreed, cost] of the best alignment of a line's words to a run of a wording's;
 * only the words within reach are aligned, as no good alignment ends later. */
function align(c, words, wording) {
  const line = words.slice(0, reach(c, wording));
  const m = wording.length;
  const values = [new Array(m + 1).fill(0)];
  const agreeds = [new Array(m + 1).fill(0)];
  let bestValue = 0;
  let bestAgreed = 0;
  for (let i = 1; i <= line.length; i++) {
    const token = line[i - 1];
    const upValue = values[i - 1];
    const upAgreed = agreeds[i - 1];
    const value = new Array(m + 1).fill(0);
    const agreed = new Array(m + 1).fill(0);
    value[0] = upValue[0] - 2;
    for (let j = 1; j <= m; j++) {
      const want = wording[j - 1];
      let v = value[j - 1] - (want === c.HOLE ? 0 : 2);
      let a = agreed[j - 1];
      if (want === c.HOLE) {
        for (let k = 1; k <= Math.min(c.HOLE_SPAN, i); k++) {
          if (values[i - k][j - 1] > v) {
            v = values[i - k][j - 1];
            a = agreeds[i - k][j - 1];
          }
        }
      } else {
        let step = -2;
        let gained = 0;
        if (token === want) {
          step = 1;
          gained = 1;
        } else if (near(token, want)) {
          step = 1 - 2 * c.TYPO;
          gained = 1;
        }
        if (upValue[j - 1] + step > v) {
          v = upValue[j - 1] + step;
          a = upAgreed[j - 1] + gained;
        }
        if (upValue[j] - 2 > v) {
          v = upValue[j] - 2;
          a = upAgreed[j];
        }
      }
      value[j] = v;
      agreed[j] = a;
      if (v > bestValue) {
        bestValue = v;
        bestAgreed = a;
      }
    }
    values.push(value);
    agreeds.push(agreed);
  }
  return [bestAgreed, (bestAgreed - bestValue) / 2];
}

/** Wordings.read: [number, cost, words] of each wording a line reads as, by its best reading; none if none reads it. */
function readTolerantly(data, line) {
  const c = data.constants;
  if (!data.wordings) return [];
  if (!data.wordingContent) {
    data.wordingContent = data.wordings.map(
      (w) => new Set(w.readings.flat().filter((x) => x.length >= 4 && x !== c.HOLE)),
    );
  }
  const tokens = tolerantWords(data, line.replace(rx(data.patterns.tolerant_type_prefix.source, "u"), ""));
  if (tokens.length < c.MIN_WORDS) return [];
  const present = new Set(tokens);
  const found = [];
  data.wordings.forEach((wording, number) => {
    let shared = 0;
    for (const w of data.wordingContent[number]) if (present.has(w)) shared++;
    if (shared < c.CONTENT_SHARED) return;
    let best = null;
    for (const words of wording.readings) {
      const [agreed, cost] = align(c, tokens, words);
      if (!(agreed >= c.MIN_WORDS && cost <= c.MAX_COST * agreed)) continue;
      const value = agreed - 2 * cost;
      if (best === null || value > best.value) best = { number, cost, words, value }; // the first of equals
    }
    if (best !== null) found.push(best);
  });
  if (!found.length) return [];
  const best = Math.max(...found.map((r) => r.value));
  // A line that agrees word for word with several wordings is cut from any of them.
  return found.filter((r) => r.value === best || r.cost === 0).map((r) => [r.number, r.cost, r.words]);
}

/** parse.py's _tolerant_message. */
function tolerantMessage(data, lines) {
  let looked = 0;
  for (let start = lines.length - 1; start >= 0; start--) {
    const line = lines[start];
    if (!strip(data, line) || frameMatch(data, line)) continue;
    looked++;
    if (looked > data.constants.TOLERANT_LINES) return null;
    if (readTolerantly(data, line).length) {
      const typed = matchAt(data.patterns.typed_line.source, line);
      return paragraph(data, lines, start, typed ? group(typed, "message") : line, typed ? group(typed, "type") : null);
    }
  }
  return null;
}

/** parse.py's _paragraph: a message from line `start` to the end of its paragraph. */
function paragraph(data, lines, start, first, type) {
  const p = data.patterns;
  const startsATraceback = (line) =>
    Boolean(matchAt(p.traceback_header.source, line) || matchAt(p.chain_separator.source, line) || frameMatch(data, line));
  let end = start + 1;
  while (
    end < lines.length &&
    strip(data, lines[end]) &&
    end - start < data.constants.MAX_MESSAGE_LINES &&
    !startsATraceback(lines[end])
  ) {
    end++;
  }
  const message = strip(data, [first, ...lines.slice(start + 1, end)].join("\n"));
  return { type, message: codePoints(message, data.constants.MAX_MESSAGE_CHARS), frames: [], compiledFrames: [] };
}

/** Matcher._tolerant_signatures: per entry number, its reason, where no signature reads the message as written. */
function tolerantSignatures(data, message) {
  const c = data.constants;
  const found = data.entries.map(() => null);
  for (const [number, cost, words] of readTolerantly(data, message)) {
    const wording = data.wordings[number];
    const text = words.map((w) => (w === c.HOLE ? "…" : w)).join(" ");
    for (const [n, weight] of wording.bearers) {
      let points = Math.max(1, weight - c.TOLERANCE_COST);
      if (cost) points = Math.min(points, c.INEXACT_CEILING);
      if (found[n] === null || points > found[n].points) {
        found[n] = { text: `the message reads as “${text}”, cut or retyped`, points };
      }
    }
  }
  return found;
}

function knownMessage(data, lines) {
  if (!data.known_messages) return null;
  for (const find of [search, searchFolded]) {
    const found = knownAt(data, lines, find);
    if (found !== null) return found;
  }
  return null;
}

function knownAt(data, lines, find) {
  for (let start = lines.length - 1; start >= 0; start--) {
    const hit = find(data.known_messages, lines[start]) || knownAcrossWrap(data, lines, start, find);
    if (hit) {
      const typed = search(data.patterns.type_before.source, lines[start].slice(0, hit.index));
      return paragraph(data, lines, start, lines[start].slice(hit.index), typed ? group(typed, "type") : null);
    }
  }
  return null;
}

/** parse.py's _known_across_wrap: a known message wrapped at spaces, sought over up to WRAP_SPAN lines. */
function knownAcrossWrap(data, lines, start, find) {
  const first = rstrip(data, lines[start]);
  let window = first;
  let end = start + 1;
  while (
    end < lines.length &&
    end - start < data.constants.WRAP_SPAN &&
    codeLength(rstrip(data, lines[end - 1])) >= data.constants.WRAPPED_MIN &&
    codeLength(rstrip(data, lines[end - 1])) <= data.constants.WRAPPED_MAX
  ) {
    const following = strip(data, lines[end]);
    if (!following || codeLength(following) > data.constants.WRAPPED_MAX) break;
    window = `${window} ${following}`;
    end += 1;
  }
  if (end === start + 1) return null;
  const hit = find(data.known_messages, window);
  return hit && hit.index < first.length ? hit : null;
}

function withKnownMessage(chain, known) {
  if (known === null) return chain;
  if (!chain.length) return [known];
  const last = chain[chain.length - 1];
  return [...chain.slice(0, -1), { ...last, type: last.type || known.type, message: known.message }];
}

function frameMatch(data, line) {
  for (const shape of data.patterns.frame_shapes) {
    const m = matchAt(shape.source, line);
    if (m) return m;
  }
  return null;
}

/** fixer/explain/parse.py: _open_brackets(). */
function openBrackets(code) {
  const count = (chars) => [...code].filter((c) => chars.includes(c)).length;
  return count("([{") - count(")]}");
}

function codeAfter(data, lines, i) {
  const p = data.patterns;
  let code = null;
  let continued = 0;
  while (i < lines.length) {
    const line = lines[i];
    const stripped = strip(data, line);
    if (!stripped) {
      if (code === null && i + 1 < lines.length && matchAt(p.ipy_context.source, lines[i + 1] || "")) {
        i += 1;
        continue;
      }
      break;
    }
    if (frameMatch(data, line)) break;
    if (matchAt(p.traceback_header.source, line) || matchAt(p.chain_separator.source, line)) break;
    if (matchAt(p.carets.source, line)) {
      i += 1;
      continue;
    }
    if (matchAt(p.ipy_arrow.source, line)) {
      code = stripped;
      i += 1;
      continue;
    }
    const numbered = matchAt(p.ipy_context.source, line);
    if (numbered || stripped === "...") {
      // A call the arrowed line leaves open goes on over the numbered lines after it.
      if (numbered && code !== null && continued < data.constants.CONTINUED_LINES && openBrackets(code) > 0) {
        code = `${code} ${strip(data, line.slice(numbered[0].length))}`;
        continued += 1;
      }
      i += 1;
      continue;
    }
    if (code !== null || (!isSpace(data, firstChar(line)) && matchAt(p.exception_line.source, stripped))) break;
    code = stripped;
    i += 1;
  }
  return [code, i];
}

class Scanner {
  constructor(data, lines) {
    this.data = data;
    this.p = data.patterns;
    this.headerType = null;
    this.lines = lines;
    this.i = 0;
    this.chains = [];
    this.current = [];
    this.frames = [];
    this.inTraceback = false;
    this.linked = false;
  }

  run() {
    while (this.i < this.lines.length) this.step();
    this.closeFramesWithoutException();
    if (this.current.length) this.chains.push(this.current);
    return this.chains;
  }

  step() {
    const p = this.p;
    const line = this.lines[this.i];
    const header = matchAt(p.traceback_header.source, line);
    if (header) {
      this.closeFramesWithoutException();
      this.headerType = group(header, "type");
      if (!this.linked && this.current.length) {
        this.chains.push(this.current);
        this.current = [];
      }
      this.linked = false;
      this.inTraceback = true;
      this.i += 1;
      return;
    }
    if (matchAt(p.chain_separator.source, line)) {
      this.linked = true;
      this.i += 1;
      return;
    }
    const frame = this.frameAt(this.i);
    if (frame !== null) {
      this.inTraceback = true;
      this.frames.push(frame);
      return;
    }
    const exc =
      !isSpace(this.data, firstChar(line)) || this.inTraceback
        ? matchAt(p.exception_line.source, strip(this.data, line))
        : null;
    if (exc && (group(exc, "message") !== null || this.inTraceback)) {
      this.exception(group(exc, "type"), group(exc, "message") || "");
      return;
    }
    this.i += 1;
  }

  frameAt(i) {
    const m = frameMatch(this.data, this.lines[i]);
    if (!m) return null;
    const path = strip(this.data, group(m, "path"));
    let number = lineNumber(group(m, "line"));
    let fn = strip(this.data, group(m, "function") || "") || null;
    let [code, next] = codeAfter(this.data, this.lines, i + 1);
    this.i = next;
    const arrow = code !== null ? matchAt(this.p.ipy_arrow.source, code) : null;
    if (arrow) {
      number = number || lineNumber(group(arrow, "line"));
      code = strip(this.data, group(arrow, "code"));
    }
    if (path.startsWith("Cell In") || path.startsWith("Input In")) fn = fn || "<cell>";
    return { path, line: number, function: fn, code, library: libraryOf(this.data, path) };
  }

  exception(typeName, firstLine) {
    const p = this.p;
    const messageLines = [firstLine];
    this.i += 1;
    const compiled = [];
    let blankRun = 0;
    while (this.i < this.lines.length && messageLines.length < this.data.constants.MAX_MESSAGE_LINES) {
      const line = this.lines[this.i];
      if (matchAt(p.traceback_header.source, line) || matchAt(p.chain_separator.source, line)) break;
      if (matchAt(p.from_user_code.source, line)) {
        this.i += 1;
        while (this.i < this.lines.length) {
          const frame = this.frameAt(this.i);
          if (frame === null) break;
          compiled.push(frame);
        }
        break;
      }
      if (!strip(this.data, line)) {
        blankRun += 1;
        if (blankRun >= 2) break;
      } else {
        if (blankRun && (matchAt(p.frame.source, line) || matchAt(p.exception_line.source, strip(this.data, line)))) {
          break;
        }
        if (this.looksLikeLog(line) && !isSpace(this.data, firstChar(line))) break;
        if (!blankRun && this.endsTheMessage(this.lines[this.i - 1], line, messageLines.join("\n"))) break;
        blankRun = 0;
      }
      messageLines.push(line);
      this.i += 1;
    }
    const message = codePoints(strip(this.data, messageLines.join("\n")), this.data.constants.MAX_MESSAGE_CHARS);
    const repeated = fullmatch(p.repeated.source, typeName);
    this.current.push({
      type: repeated ? repeated[1] : typeName,
      message,
      frames: this.frames,
      compiledFrames: compiled,
    });
    this.headerType = null;
    this.frames = [];
    this.inTraceback = false;
  }

  /** parse.py's _ends_the_message: a flush-left line under a complete message is the log going on. */
  endsTheMessage(previous, line, soFar) {
    const data = this.data;
    const first = firstChar(line);
    if (!first || isSpace(data, first) || line.startsWith("(")) return false;
    if (line.startsWith("Exception ignored in")) return true;
    if (this.continuesKnown(soFar, line)) return false;
    if (search(this.p.sentence_end.source, previous)) return true;
    const trimmed = previous.replace(/\s+$/u, "");
    if ([...trimmed].length < data.constants.WRAPPED_MIN) return !search(this.p.goes_on.source, previous);
    if (!data.known_messages || trimmed !== previous) return false;
    // No more of the last two lines than a known message can span, in code points as Python slices.
    const span = data.constants.WRAP_SPAN * data.constants.WRAPPED_MAX;
    const words = soFar.split("\n").slice(-2).join(" ").split(/\s+/u).filter(Boolean).join(" ");
    const flat = [...words].slice(-span).join("");
    for (const found of flat.matchAll(rx(data.known_messages, "gu"))) {
      if (found.index + found[0].length === flat.length) return true;
    }
    return false;
  }

  /** parse.py's _continues_known: the line completes a known message begun in the last two lines. */
  continuesKnown(soFar, line) {
    const known = this.data.known_messages;
    const lastTwo = soFar.split("\n").slice(-2);
    if (!known || [...lastTwo, line].some((piece) => codeLength(piece) > this.data.constants.WRAPPED_MAX)) return false;
    const words = (text) => text.split(/\s+/u).filter(Boolean).join(" ");
    const tail = words(lastTwo.join(" "));
    const joined = `${tail} ${words(line)}`;
    for (const found of joined.matchAll(rx(known, "gu"))) {
      if (found.index < tail.length && tail.length < found.index + found[0].length) return true;
    }
    return false;
  }

  looksLikeLog(line) {
    return Boolean(
      matchAt(this.p.log_line.source, line) || matchAt(this.p.exception_line.source, strip(this.data, line)),
    );
  }

  closeFramesWithoutException() {
    if (!this.frames.length) return;
    const last = this.current.length ? this.current[this.current.length - 1] : null;
    const earlier = last && !last.frames.length ? last : null;
    if (earlier !== null) {
      this.current[this.current.length - 1] = {
        type: earlier.type,
        message: earlier.message,
        frames: this.frames,
        compiledFrames: [],
      };
    } else {
      this.current.push({ type: this.headerType, message: "", frames: this.frames, compiledFrames: [] });
    }
    this.frames = [];
    this.inTraceback = false;
  }
}

/** parse.py's _parse_lines: the last chain with a known message, else the last that names a type. */
function parseLines(data, lines) {
  const chains = new Scanner(data, lines).run();
  if (!chains.length) return [];
  const typed = chains.filter((chain) => chain[chain.length - 1].type !== null);
  if (data.known_messages) {
    for (let k = typed.length - 1; k >= 0; k--) {
      if (typed[k].some((raised) => search(data.known_messages, raised.message))) return typed[k];
    }
  }
  return typed.length ? typed[typed.length - 1] : chains[chains.length - 1];
}

function hasMessage(chain) {
  return Boolean(chain[chain.length - 1].message);
}

/** The last traceback in `text` (see fixer/explain/parse.py), or null. */
function parse(data, text) {
  const cleaned = clean(data, text);
  const groups = splitRanks(data, cleaned.split("\n"));
  const found = new Map();
  for (const [rank, lines] of groups) {
    let chain = parseLines(data, lines);
    if (!chain.length || !chain[chain.length - 1].message) {
      let known = knownMessage(data, lines);
      if (known === null) known = tolerantMessage(data, lines);
      chain = withKnownMessage(chain, known);
    }
    if (chain.length) found.set(rank, chain);
  }
  if (!found.size) return null;
  const ranks = [...found.keys()].filter((r) => r !== null).sort((a, b) => a - b);
  let chosen = ranks.length ? ranks[0] : null;
  if (chosen === null || (found.has(null) && hasMessage(found.get(null)) && !hasMessage(found.get(chosen)))) {
    chosen = null;
  }
  const chain = found.get(chosen);
  const final = chain[chain.length - 1];
  const earlier = chain.slice(0, -1);
  return {
    final,
    chain: earlier,
    rank: chosen,
    ranks,
    text: cleaned,
    exception: final.type,
    message: final.message,
    messages: [final.message, ...earlier.slice().reverse().map((e) => e.message)],
    allFrames: [...earlier, final].flatMap((e) => [...e.frames, ...e.compiledFrames]),
  };
}

// ---- evidence.py --------------------------------------------------------------------------------

function deviceKind(device) {
  const lowered = device.toLowerCase();
  if (lowered.startsWith("torch.cuda.") || lowered === "cuda" || lowered === "gpu" || lowered.startsWith("cuda")) {
    return "cuda";
  }
  if (lowered.startsWith("mps")) return "mps";
  if (lowered.startsWith("torch.") || lowered.startsWith("cpu") || lowered.endsWith("tensor")) return "cpu";
  if (lowered.startsWith("c10::") || ["float", "double", "half"].includes(lowered)) return "dtype";
  return lowered.split(":")[0];
}

function normaliseOp(data, raw) {
  if (!raw) return null;
  let op = raw.startsWith("aten.") ? raw.slice(5) : raw;
  op = sub(data.patterns.op_wrapper.source, op, "");
  op = sub(data.patterns.op_legacy.source, op, "");
  return op.replace(/^_+/, "") || null;
}

function sortedStrings(items) {
  return [...items].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The facts of a parsed traceback (see fixer/explain/evidence.py); no user source in a browser. */
function extract(data, tb) {
  const space = rx(data.patterns.space.source + "+", "gu");
  const messages = tb.messages.filter((m) => m).map((m) => m.split(space).filter((w) => w).join(" "));
  const joined = messages.join("\n");
  let shape = null;
  for (const p of data.patterns.shapes) {
    shape = search(p.source, joined);
    if (shape) break;
  }
  const g = (name) => (shape ? group(shape, name) : null);
  let common = g("com") || (g("com_type") ? deviceKind(g("com_type")) : null);
  let offending = g("off") || (g("off_type") ? deviceKind(g("off_type")) : null);
  // Where the wording does not say which side is odd, the CPU one is: a tensor left behind.
  const leftBehind = common && offending && deviceKind(common) === "cpu" && !["cpu", "dtype"].includes(deviceKind(offending));
  if (g("either") !== null && leftBehind) [common, offending] = [offending, common];
  const raw = shape ? [common, offending].filter((d) => d) : findall(data.patterns.device_token.source, joined);
  const devices = [...new Set(raw)];
  const kinds = new Set(devices.map(deviceKind));
  const checksDtype = Boolean(g("com_type")) || g("dtype_check") !== null;
  const dtypeOnly = Boolean((checksDtype && kinds.size === 1 && g("device_check") === null) || kinds.has("dtype"));
  const frames = tb.allFrames;
  return {
    exception: tb.exception,
    message: tb.message,
    messages,
    devices,
    offending,
    common,
    argument: g("arg"),
    op: normaliseOp(data, g("op")),
    libraries: new Set(frames.filter((f) => f.library).map((f) => f.library)),
    frameLines: frames.map(
      (f) => `${normalisePath(f.path)}:${f.function || ""}: ${codePoints(f.code || "", data.constants.MAX_CODE_CHARS)}`,
    ),
    text: tb.text,
    dtypeOnly,
    deviceKinds: sortedStrings(devices.map(deviceKind)),
    offendingKind: offending ? deviceKind(offending) : null,
  };
}

// ---- normalise.py -------------------------------------------------------------------------------

/** normalise._path: a path-like run up to its last `.py` name becomes <PATH>. */
function pyPath(suffix, token) {
  let end = null;
  for (const m of token.matchAll(new RegExp(suffix, "gu"))) end = m.index + m[0].length;
  return end === null ? token : "<PATH>" + token.slice(end);
}

function normalise(data, message) {
  let text = message;
  for (const rule of data.patterns.normalise) {
    const r = rule.replacement;
    const replace = r.upper_group
      ? (...m) => `<${m[r.upper_group].toUpperCase()}>`
      : r.py_path
        ? (m) => pyPath(r.py_path.source, m)
        : () => r.text;
    text = sub(rule.source, text, replace);
  }
  return strip(data, text);
}

// ---- rapidfuzz fuzz.ratio -----------------------------------------------------------------------

/** Normalised InDel similarity * 100 over code points, as rapidfuzz's `fuzz.ratio`. */
function ratio(a, b) {
  const s1 = Array.from(a);
  const s2 = Array.from(b);
  const total = s1.length + s2.length;
  if (!total) return 100;
  // Longest common subsequence, one row at a time.
  let prev = new Array(s2.length + 1).fill(0);
  let row = new Array(s2.length + 1).fill(0);
  for (let i = 1; i <= s1.length; i++) {
    for (let j = 1; j <= s2.length; j++) {
      row[j] = s1[i - 1] === s2[j - 1] ? prev[j - 1] + 1 : Math.max(prev[j], row[j - 1]);
    }
    [prev, row] = [row, prev];
  }
  const distance = total - 2 * prev[s2.length];
  return (1.0 - distance / total) * 100;
}

// ---- match.py -----------------------------------------------------------------------------------

function closest(data, entry, normalised, kinds) {
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const comparable = entry.examples.filter((k) => !(kinds.length && k.kinds.length) || same(k.kinds, kinds));
  if (!normalised || !comparable.length) return null;
  let best = null;
  for (const k of comparable) {
    const r = ratio(normalised, k.message);
    if (best === null || r > best[0] || (r === best[0] && k.source > best[1])) best = [r, k.source];
  }
  return best;
}

function similarity(data, found, all, k) {
  const c = data.constants;
  if (found === null || found[0] <= c.SIMILARITY_FLOOR) return null;
  const [r, source] = found;
  const bar = Math.min(r - c.SIMILARITY_TIE, c.RESEMBLANCE);
  if (all.some((other, j) => j !== k && other !== null && other[0] >= bar)) return null;
  const points = roundHalfEven((c.SIMILARITY_POINTS * (r - c.SIMILARITY_FLOOR)) / (100 - c.SIMILARITY_FLOOR));
  if (points <= 0) return null;
  return { text: `the message is ${roundHalfEven(r)}% like a known case (${source})`, points };
}

/** fixer/explain/priors.py: key() and lookup(). */
function priorKey(data, message) {
  const p = data.patterns;
  const unquoted = message.trim().replace(/^`+|`+$/gu, ""); // a message pasted as inline code
  const words = unquoted.split(rx(p.space.source + "+", "gu")).filter((w) => w).join(" ");
  const text = sub(p.space_before_punctuation.source, normalise(data, words.toLowerCase()).toLowerCase(), "");
  return sub(p.type_prefix.source, text, "").replace(rx(p.since_2_8.source, "gu"), (...found) => inEarlierWords(found.at(-1)));
}

/** fixer/explain/priors.py: _in_earlier_words(), given the match's named groups. */
function inEarlierWords(groups) {
  const said = `but found at least two devices, ${groups.com} and ${groups.off}!`;
  return groups.op ? `${said} (when checking argument for argument ${groups.arg} in method ${groups.op})` : said;
}

function priorsOf(data, message, backOff) {
  const found = priorKey(data, message);
  const p = data.patterns;
  const keys = [found, sub(p.accelerators.source, found, "<cuda>")];
  if (backOff) keys.push(...keys.map((k) => sub(p.checking_clause.source, k, "")));
  const several = (k) => Object.hasOwn(data.priors, k) && Object.keys(data.priors[k]).length > 1;
  const hit = keys.find(several);
  if (hit !== undefined) return data.priors[hit];
  // A message cut short is the start of the counted messages it could be: their causes, counted together.
  const starts = keys.slice(0, 2).filter((k) => [...k].length >= data.constants.CUT_MINIMUM);
  const merged = new Map();
  for (const [k, causes] of Object.entries(data.priors)) {
    if (!starts.some((start) => k.startsWith(start))) continue;
    for (const [cause, prior] of Object.entries(causes)) merged.set(cause, (merged.get(cause) ?? 0) + prior.count);
  }
  return merged.size > 1 ? weighed(data, merged) : {};
}

/** fixer/explain/priors.py: weighed() and points(). */
function weighed(data, counts) {
  const values = [...counts.values()];
  const total = values.reduce((sum, n) => sum + n, 0);
  const most = Math.max(...values);
  const out = {};
  for (const [cause, n] of counts) {
    out[cause] = { count: n, total, points: roundHalfEven((data.constants.PRIOR_POINTS * Math.log1p(n)) / Math.log1p(most)) };
  }
  return out;
}

function bestSignature(entry, ev, find, source) {
  let best = null;
  for (const sig of entry.signatures) {
    if (sig.source !== source) continue;
    if (sig.exception && ev.exception && !fullmatch(sig.exception, rsplitLast(ev.exception, "."))) continue;
    for (const message of ev.messages) {
      const hit = find(sig.pattern, message);
      if (hit && (best === null || sig.weight > best.points)) {
        best = { text: `the message says “${hit[0].split(/\s+/u).filter((w) => w).join(" ")}”`, points: sig.weight };
        break;
      }
    }
  }
  return best;
}

function holds(rule, ev) {
  if (rule.needs_code) return false; // detectors are Python that reads code: the page ranks on the text alone
  const w = rule.when;
  const hasLibrary = (lib) => [...ev.libraries].some((l) => l === lib || l.startsWith(lib + "."));
  const checks = {
    message: () => (ev.messages.length ? ev.messages : [""]).some((m) => search(w.message, m)),
    text: () => Boolean(search(w.text, ev.text)),
    exception: () => Boolean(ev.exception && fullmatch(w.exception, rsplitLast(ev.exception, "."))),
    argument: () => Boolean(ev.argument && fullmatch(w.argument, ev.argument)),
    op: () => Boolean(ev.op && search(w.op, ev.op)),
    devices: () => {
      const want = sortedStrings(w.devices);
      const got = sortedStrings(ev.devices.map(deviceKind));
      return want.length === got.length && want.every((x, i) => x === got[i]);
    },
    offending: () => ev.offendingKind === w.offending,
    library: () => w.library.some(hasLibrary),
    frame: () => ev.frameLines.some((line) => search(w.frame, line)),
  };
  return Object.entries(checks).every(([name, check]) => w[name] === undefined || w[name] === null || check());
}

function score(data, entry, ev, found, all, k, signature, prior) {
  const c = data.constants;
  const reasons = [];
  const similar = similarity(data, found, all, k);
  const resembles = found !== null && found[0] >= c.RESEMBLANCE;
  if (signature) reasons.push(signature);
  if (similar) reasons.push(similar);
  if (prior && prior.points) {
    reasons.push({ text: `${prior.count} of ${prior.total} real cases of this message alone had this cause`, points: prior.points });
  }
  const rules = entry.rules.filter((r) => holds(r, ev)).map((r) => ({ text: r.because, points: r.weight }));
  reasons.push(...rules);
  const evidencePoints = rules.reduce((sum, r) => sum + r.points, 0);
  // The message admits an entry by its wording, its resemblance to a real case, or the real cases counted behind it.
  const admitted = Boolean(signature) || resembles || Boolean(prior);
  const competes = admitted || (!ev.message && evidencePoints >= c.FRAMES_ALONE);
  if (!competes) return null;
  const total = Math.max(1, Math.min(100, reasons.reduce((sum, r) => sum + r.points, 0)));
  const ordered = reasons
    .map((r, i) => [r, i])
    .sort((a, b) => Math.abs(b[0].points) - Math.abs(a[0].points) || a[1] - b[1])
    .map(([r]) => r);
  const wording = signature ? signature.points : 0;
  const prevalence = prevalenceOf(data).get(entry.id) || 0;
  return { id: entry.id, title: entry.title, summary: entry.summary, url: entry.url, score: total, reasons: ordered, wording, prevalence };
}

/** Matcher._prevalence: each cause's real cases, over every counted message. */
function prevalenceOf(data) {
  if (!data.prevalence) {
    data.prevalence = new Map();
    for (const causes of Object.values(data.priors)) {
      for (const [cause, prior] of Object.entries(causes)) data.prevalence.set(cause, (data.prevalence.get(cause) || 0) + prior.count);
    }
  }
  return data.prevalence;
}

/** Ranked matches for an extracted evidence (see Matcher.rank). */
function rank(data, ev) {
  if (ev.dtypeOnly) return [];
  const normalised = ev.message ? normalise(data, ev.message) : "";
  const found = data.entries.map((e) => closest(data, e, normalised, ev.deviceKinds));
  const spoken = data.entries.some((e) => e.rules.some((r) => r.when.argument !== undefined && fullmatch(r.when.argument, ev.argument || "")));
  const counted = ev.message ? priorsOf(data, ev.message, !spoken) : {};
  // PyTorch's own messages speak only where no written signature reads the message (see Matcher.rank).
  let signatures = [];
  let read = false;
  for (const [source, find] of [[false, search], [false, searchFolded], [true, search], [true, searchFolded]]) {
    signatures = data.entries.map((entry) => bestSignature(entry, ev, find, source));
    read = !ev.message || signatures.some((s) => s);
    if (read) break;
  }
  // A message PyTorch prints as it is, whose cause the KB lacks, is not read as a near one.
  if (!read && !(data.outside || []).some((pattern) => search(pattern, ev.message))) {
    signatures = tolerantSignatures(data, ev.message);
  }
  const matches = [];
  data.entries.forEach((entry, k) => {
    const m = score(data, entry, ev, found[k], found, k, signatures[k], counted[entry.id]);
    if (m) matches.push(m);
  });
  if (!matches.length && ev.message && unreadDeviceMessage(data, ev.message)) {
    for (const [k, reason] of nearest(data, found)) {
      const m = score(data, data.entries[k], ev, found[k], found, k, reason, counted[data.entries[k].id]);
      if (m) matches.push(m);
    }
  }
  matches.sort(byRank);
  return matches;
}

/** Matcher._unread_device_message: a message about devices that nothing read and that is not outside the KB. */
function unreadDeviceMessage(data, message) {
  const outside = (data.outside || []).some((pattern) => search(pattern, message));
  return Boolean(search(data.patterns.device_words.source, message.toLowerCase())) && !outside;
}

/** Matcher._nearest: the causes whose real cases the message is nearest to, a few points each. */
function nearest(data, found) {
  const c = data.constants;
  const order = found
    .map((f, k) => [f, k])
    .filter(([f]) => f !== null)
    .sort((a, b) => b[0][0] - a[0][0] || byId(data.entries[a[1]].id, data.entries[b[1]].id))
    .slice(0, c.NEAREST);
  return order.map(([[r, source], k]) => {
    const text = `nothing in the KB reads this message; it is ${roundHalfEven(r)}% like a case of this cause (${source})`;
    return [k, { text, points: Math.max(1, roundHalfEven((c.NEAREST_POINTS * r) / 100)) }];
  });
}

function byId(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// The follow-up questions (fixer/explain/narrow.py): scores read as log-odds, TEMPERATURE points to a
// factor of e, so an answer moves each cause by the log of how much likelier it makes it than a cause that
// says nothing of the fact; an answer against what a cause says it cannot be without rules it out.

function factsOf(data, id) {
  if (!data._facts) data._facts = new Map(data.entries.map((e) => [e.id, new Map(e.facts)]));
  return data._facts.get(id) || new Map();
}

function chance(data, match, question) {
  const said = factsOf(data, match.id).get(question.fact);
  return said === undefined ? question.base : said;
}

function byRank(a, b) {
  return b.score - a.score || b.wording - a.wording || b.prevalence - a.prevalence || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The ranking after one answer (true, false, or null for "don't know"); one read from the traceback itself
 * (`fromText`) moves nothing, since the text's scores weigh it already. */
function answer(data, matches, question, reply, fromText = false) {
  if (reply === null || reply === undefined || fromText) return [...matches];
  const base = reply ? question.base : 1 - question.base;
  const said = `you answered ${reply ? "yes" : "no"}: ${question.ask}`;
  const updated = [];
  for (const match of matches) {
    const c = chance(data, match, question);
    const likely = reply ? c : 1 - c;
    if (likely <= data.constants.RULED_OUT && factsOf(data, match.id).has(question.fact)) continue;
    const points = roundHalfEven(data.constants.TEMPERATURE * Math.log(likely / base));
    if (!points) {
      updated.push(match);
      continue;
    }
    // As Match.moved: a cause whose reasons sum below zero moves from that sum, not from the floor.
    const start = Math.min(match.score, match.reasons.reduce((sum, r) => sum + r.points, 0));
    const score = Math.max(0, Math.min(100, start + points));
    updated.push({ ...match, score, reasons: [{ text: said, points }, ...match.reasons] });
  }
  return updated.sort(byRank);
}

function settled(data, matches) {
  // The cause the KB does not hold, at BEYOND, is always in the race: a weak lone guess is no answer,
  // and neither is the last known cause left standing after answers pushed the others below it.
  if (!matches.length) return true;
  const runnerUp = matches.length > 1 ? matches[1].score : data.constants.BEYOND;
  return matches[0].score - Math.max(runnerUp, data.constants.BEYOND) >= data.constants.MARGIN;
}

/** The first cause, or null where none scores above a cause the KB does not hold. */
function first(data, matches) {
  return matches.length && matches[0].score >= data.constants.BEYOND ? matches[0].id : null;
}

function beliefs(data, matches) {
  const scores = [...matches.map((m) => m.score), data.constants.BEYOND];
  const top = Math.max(...scores);
  const weights = scores.map((s) => Math.exp((s - top) / data.constants.TEMPERATURE));
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / total);
}

function information(data, matches, question) {
  const b = beliefs(data, matches);
  const chances = [...matches.map((m) => chance(data, m, question)), question.base];
  const yes = b.map((x, i) => x * chances[i]);
  const no = b.map((x, i) => x * (1 - chances[i]));
  return question.known * (Math.max(...yes) + Math.max(...no) - Math.max(...b));
}

/** The questions the traceback answers itself (a message naming cuda:1 sees several GPUs): not asked. */
function shownAnswers(data, ev, matches) {
  if (!matches.length || settled(data, matches)) return [];
  const answers = [];
  for (const question of data.questions) {
    let hit = null;
    for (const [sources, lines] of [[question.shown, ev.messages], [question.frames, ev.frameLines]]) {
      for (const source of sources) {
        for (const line of lines) {
          hit = search(source, line);
          if (hit) break;
        }
        if (hit) break;
      }
      if (hit) break;
    }
    if (hit) answers.push({ question, reply: true, where: `the traceback: ${hit[0]}`, fromText: true });
  }
  return answers;
}

/** The unanswered question expected to tell the most, of those that could change or settle the first place. */
function nextQuestion(data, matches, answered) {
  if (!matches.length) return null;
  const done = new Set(answered.map((a) => a.question.fact));
  const leader = first(data, matches);
  let best = null;
  for (const question of data.questions) {
    if (done.has(question.fact)) continue;
    const outcomes = [true, false].map((reply) => answer(data, matches, question, reply));
    if (!outcomes.some((o) => first(data, o) !== leader || settled(data, o))) continue;
    const gain = information(data, matches, question);
    if (gain < data.constants.WORTH) continue;
    if (best === null || gain > best[0] + 1e-9) best = [gain, question];
  }
  return best ? best[1] : null;
}

/** `fixer explain` for pasted text: {traceback, evidence, matches}; never throws on odd input. */
function explain(data, text) {
  const tb = parse(data, text);
  if (tb === null) return { traceback: null, evidence: null, matches: [], answers: [] };
  const ev = extract(data, tb);
  const matches = rank(data, ev);
  return { traceback: tb, evidence: ev, matches, answers: shownAnswers(data, ev, matches) };
}

globalThis.fixerMatch = { explain, parse, answer, nextQuestion, settled, first };
})();
