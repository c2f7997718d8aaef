// The matcher's data (assets/fixer-kb.json, written by the site build from the KB), fetched once a page
// needs it: the paste box and the search box share one request.

export const SITE_ROOT = new URL("../", import.meta.url);
const DATA_URL = new URL("assets/fixer-kb.json", SITE_ROOT);

let loading = null;

export function loadData() {
  if (!loading) {
    loading = fetch(DATA_URL).then((response) => {
      if (!response.ok) throw new Error(`cannot load the knowledge base (${response.status})`);
      return response.json();
    });
    loading.catch(() => {
      loading = null;
    });
  }
  return loading;
}
