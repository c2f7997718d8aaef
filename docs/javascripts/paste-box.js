// The home page's paste-your-traceback box: ranks KB entries in the browser, no server involved.
// Pasted text is only read by the matcher; results are built with DOM APIs and textContent, so
// nothing the user pastes is ever parsed as HTML or run.

(() => {
const { explain } = globalThis.fixerMatch;
const { loadData, SITE_ROOT } = globalThis.fixerData;

const SHOWN = 5;

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function note(results, text) {
  results.replaceChildren(element("p", text, "fixer-paste__note"));
}

function render(results, explanation) {
  const { traceback, matches } = explanation;
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
  }
  if (!matches.length) {
    parts.push(element("p", "No entry matches this traceback.", "fixer-paste__note"));
    results.replaceChildren(...parts);
    return;
  }
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
  parts.push(list);
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
      render(results, explain(await loadData(), input.value));
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
