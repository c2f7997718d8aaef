// The search box, when what is typed or pasted is an error message: material's full-text search ranks
// pages by how many of the message's common words they hold, so the entry that talks most about
// tensors and devices wins; fixer's own matcher knows which entry's signature the message is. Its
// best match is pinned above material's results, marked as such; other queries are left alone.
// Results are built with DOM APIs and textContent, so nothing typed is ever parsed as HTML.

(() => {
const { explain } = globalThis.fixerMatch;
const { loadData, SITE_ROOT } = globalThis.fixerData;

const MIN_WORDS = 4; // a message, not a word or two: "state_steps" or a kernel's name is material's to answer
const WAIT_MS = 120;

let pinned = null; // the item to keep first in the results, for the query now in the box

function item(match) {
  const entry = document.createElement("li");
  entry.className = "md-search-result__item fixer-search-match";
  const link = document.createElement("a");
  link.className = "md-search-result__link";
  link.href = new URL(match.url, SITE_ROOT).href;
  const article = document.createElement("article");
  article.className = "md-search-result__article md-typeset";
  const title = document.createElement("h1");
  title.textContent = match.title;
  const why = document.createElement("p");
  why.textContent = "fixer's best match for this message (its signature), as the paste box on the home page ranks it";
  article.append(title, why);
  link.append(article);
  entry.append(link);
  return entry;
}

function place(list) {
  const first = list.firstElementChild;
  for (const stale of list.querySelectorAll(".fixer-search-match")) if (stale !== pinned) stale.remove();
  if (pinned && first !== pinned && list.childElementCount) list.prepend(pinned);
}

async function update(query, list) {
  pinned = null;
  if (query.trim().split(/\s+/u).length >= MIN_WORDS) {
    try {
      const best = explain(await loadData(), query).matches[0];
      if (best && best.wording > 0) pinned = item(best);
    } catch {
      pinned = null; // the search works as before without the matcher
    }
  }
  place(list);
}

function setUp(input, list) {
  let timer = null;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => update(input.value, list), WAIT_MS);
  });
  // material replaces the results on every keystroke and when its index answers: pin again each time
  new MutationObserver(() => place(list)).observe(list, { childList: true });
}

const input = document.querySelector("input.md-search__input");
const list = document.querySelector(".md-search-result__list");
if (input && list) setUp(input, list);
})();
