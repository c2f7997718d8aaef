// A page opened from disk (file://) may not start a Web Worker, and material's search runs in one: without
// it the search box stays hidden. There, and only there, `Worker` is replaced by a stand-in that runs the
// worker's script in a hidden frame: the frame's `postMessage` answers the page, and the page's messages
// reach the frame's "message" listeners, which is all material's search worker uses. Served over HTTP the
// browser's own Worker is left alone.

(() => {
  if (location.protocol !== "file:") return;

  let frames = 0;
  const post = window.postMessage; // the browser's own, before any frame's stand-in

  class FrameWorker extends EventTarget {
    constructor(url) {
      super();
      const id = `fixer-worker-${++frames}`;
      const source = new URL(url, document.baseURI).href;
      this.queue = [];
      this.frame = document.createElement("iframe");
      this.frame.hidden = true;
      this.frame.srcdoc =
        `<script>window.postMessage = (data) => parent.postMessage({ ${JSON.stringify(id)}: data }, "*");<\/script>` +
        `<script src="${source.replace(/"/g, "&quot;")}"><\/script>`;
      this.frame.addEventListener("load", () => {
        this.ready = true;
        for (const data of this.queue) this.send(data);
        this.queue = [];
      });
      window.addEventListener("message", (event) => {
        if (event.source === this.frame.contentWindow && event.data && id in event.data) {
          this.dispatchEvent(new MessageEvent("message", { data: event.data[id] }));
        }
      });
      document.documentElement.append(this.frame);
    }

    postMessage(data) {
      if (this.ready) this.send(data);
      else this.queue.push(data);
    }

    send(data) {
      // the frame shares the page's origin, so its own postMessage is the one that answers the page: the
      // browser's, called on the frame, delivers to the frame
      post.call(this.frame.contentWindow, data, "*");
    }

    terminate() {
      this.frame.remove();
    }
  }

  window.Worker = FrameWorker;
})();
