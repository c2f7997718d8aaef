// The home page's paste-your-traceback box: ranks KB entries in the browser, no server involved.
// Pasted text is only read by the matcher; results are built with DOM APIs and textContent, so
// nothing the user pastes is ever parsed as HTML or run.

(() => {
const { explain, answer, nextQuestion, settled, first } = globalThis.fixerMatch;
const { loadData, SITE_ROOT } = globalThis.fixerData;

const SHOWN = 5;
const ASKED = 3; // as `fixer explain` asks at a terminal
const BEYOND_STEPS = [
  "Print .device for every tensor the failing line takes, the layer's parameters included: the odd one out is where to look.",
  "Trace where that tensor is made or loaded, and move it (or make it) on the device of the others.",
  "Run `fixer diagnose` on the machine that failed: it checks CUDA, the devices and a checkpoint.",
  "Once you know the cause, `fixer kb new` turns the traceback into an entry for the next person.",
];

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function note(results, text) {
  results.replaceChildren(element("p", text, "fixer-paste__note"));
}

function matchList(matches) {
  const list = element("ol", undefined, "fixer-paste__matches");
  for (const match of matches.slice(0, SHOWN)) {
    const item = element("li");
    const link = element("a", match.title);
    link.href = new URL(match.url, SITE_ROOT).href;
    const title = element("p");
    title.append(link, element("span", ` — score ${match.score}`, "fixer-paste__score"));
    item.append(title);
    const why = element("ul", undefined, "fixer-paste__why");
    for (const reason of match.reasons) {
      const sign = reason.points >= 0 ? "+" : "";
      why.append(element("li", `${sign}${reason.points} ${reason.text}`));
    }
    item.append(why);
    list.append(item);
  }
  return list;
}

function answeredList(answered) {
  const list = element("ul", undefined, "fixer-paste__answered");
  for (const { question, reply } of answered.filter((a) => !a.fromText)) {
    const said = reply === null ? "don't know" : reply ? "yes" : "no";
    list.append(element("li", `${said}: ${question.ask}`));
  }
  return list;
}

/** The question the terminal would ask next, with how to find the answer and one button per reply. */
function questionBox(question, reply) {
  const box = element("div", undefined, "fixer-paste__question");
  box.append(element("p", "The text leaves these causes close. One question narrows them:", "fixer-paste__note"));
  box.append(element("p", question.ask, "fixer-paste__ask"));
  const how = element("details");
  how.append(element("summary", "How to find out"), element("p", question.check));
  box.append(how);
  const buttons = element("p");
  for (const [label, value] of [["Yes", true], ["No", false], ["Don't know", null]]) {
    const button = element("button", label, "md-button");
    button.type = "button";
    button.dataset.fixerReply = value === null ? "unknown" : String(value);
    button.addEventListener("click", () => reply(value));
    buttons.append(button);
  }
  box.append(buttons);
  return box;
}

function render(results, data, state) {
  const { traceback, matches, answered } = state;
  if (traceback === null) {
    note(results, "No exception found in that text. Paste the whole traceback, or at least its last line.");
    return;
  }
  const parts = [];
  const said = [traceback.exception, traceback.message.split("\n")[0]].filter((part) => part).join(": ");
  if (said) {
    const heading = element("p", "Read as: ", "fixer-paste__read");
    heading.append(element("code", said));
    parts.push(heading);
  } else {
    parts.push(
      element(
        "p",
        "The paste ends before the error message (the traceback's last line, RuntimeError: ...), which tells " +
          "the causes apart: paste through to it.",
        "fixer-paste__note",
      ),
    );
  }
  const asked = answered.filter((a) => !a.fromText);
  const replied = asked.some((a) => a.reply !== null);
  const beyond = first(data, matches) === null && (replied || matches.length > 0);
  if (!matches.length && !beyond) {
    parts.push(element("p", "No entry matches this traceback.", "fixer-paste__note"));
    results.replaceChildren(...parts);
    return;
  }
  if (asked.length) parts.push(element("p", "Answered:", "fixer-paste__note"), answeredList(answered));
  if (beyond) {
    parts.push(
      element(
        "p",
        replied
          ? "Probably not in the KB: your answers rule out the causes fixer knows for this message, or leave each " +
              "less likely than a cause it does not hold. What to check:"
          : "Probably not in the KB: nothing in it reads this message; the causes below are only those whose real " +
              "cases it is worded most like. What to check:",
        "fixer-paste__beyond",
      ),
    );
    const steps = element("ol");
    for (const step of BEYOND_STEPS) steps.append(element("li", step));
    parts.push(steps);
    const heading = replied ? "Still possible, though less likely:" : "Worded most like the cases of:";
    if (matches.length) parts.push(element("p", heading, "fixer-paste__note"));
  }
  if (matches.length) parts.push(matchList(matches));
  const question =
    asked.length < ASKED && matches.length && !settled(data, matches) ? nextQuestion(data, matches, answered) : null;
  if (question !== null) {
    const reply = (value) => {
      const next = { ...state, answered: [...answered, { question, reply: value }] };
      next.matches = answer(data, matches, question, value);
      render(results, data, next);
    };
    parts.splice(said ? 1 : 0, 0, questionBox(question, reply));
  }
  results.replaceChildren(...parts);
}

function setUp(box) {
  const input = box.querySelector("textarea");
  const button = box.querySelector("button");
  const results = box.querySelector("[data-fixer-results]");
  if (!input || !button || !results) return;
  const run = async () => {
    if (!input.value.trim()) {
      note(results, "Paste a traceback first.");
      return;
    }
    note(results, "Matching…");
    try {
      const data = await loadData();
      const { traceback, matches, answers } = explain(data, input.value);
      render(results, data, { traceback, matches, answered: answers });
    } catch (error) {
      note(results, `Could not match: ${error.message}`);
    }
  };
  button.addEventListener("click", run);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) run();
  });
  button.disabled = false;
}

for (const box of document.querySelectorAll("[data-fixer-paste]")) setUp(box);
})();
