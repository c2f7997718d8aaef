// The matcher's data, read once a page needs it (the paste box and the search box share it). The site build
// writes it as a classic script, assets/fixer-kb.js, that sets `globalThis.fixerKB`: a script element loads
// from the site's own folder whether it is served or opened from disk, where fetch() is refused.

(() => {
  const SITE_ROOT = new URL("../", document.currentScript.src);
  const DATA_URL = new URL("assets/fixer-kb.js", SITE_ROOT);
  let loading = null;

  function loadData() {
    if (!loading) {
      loading = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = DATA_URL.href;
        script.onload = () => resolve(globalThis.fixerKB);
        script.onerror = () => reject(new Error("cannot load the knowledge base"));
        document.head.append(script);
      });
      loading.catch(() => {
        loading = null;
      });
    }
    return loading;
  }

  globalThis.fixerData = { SITE_ROOT, loadData };
})();
