// The iframe snippet at the end of each entry page. The build cannot know the address the site will be
// served from, so it writes the embed view's address relative to the page; this makes it absolute, ready to
// paste into a wiki.

for (const code of document.querySelectorAll("code[data-fixer-embed]")) {
  const relative = code.dataset.fixerEmbed;
  const absolute = new URL(relative, document.baseURI).href;
  code.textContent = code.textContent.replace(`src="${relative}"`, `src="${absolute}"`);
}
