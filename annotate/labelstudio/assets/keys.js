/* annotate: the keyboard flow of the rationale box on Label Studio 1.23's labelling page (served by
   annotate's front door into every page).
   The editor's hotkeys switch to an "input" scope whenever a key's target is a text box, and its
   Ctrl+Enter (submit) is bound only outside it: typed into the box, Ctrl+Enter did nothing and the
   next hotkey digit became text. So, in the rationale box: Ctrl+Enter (Cmd+Enter) leaves the box and
   sends the key on to the page, where the editor submits (and saves the typed text); Escape leaves
   the box. Choosing "unsure" with its key (3) puts the cursor in the box, where the reason goes. */
(() => {
  const BOX = ".lsf-text-area textarea, .lsf-text-area input";
  window.addEventListener("keydown", (e) => {
    const t = e.target;
    if (!(t instanceof HTMLElement) || !t.matches(BOX)) return;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      e.stopImmediatePropagation();
      t.blur();
      document.body.dispatchEvent(new KeyboardEvent("keydown", {
        key: "Enter", code: "Enter", keyCode: 13, which: 13,
        ctrlKey: e.ctrlKey, metaKey: e.metaKey, bubbles: true, cancelable: true,
      }));
    } else if (e.key === "Escape") {
      t.blur();
    }
  }, true);
  const focusBoxIfUnsure = () => setTimeout(() => {
    if (!document.querySelector('input[type=radio][name="unsure"]:checked')) return;
    const box = [...document.querySelectorAll(BOX)].find((b) => b.offsetParent !== null);
    if (box) box.focus();
  }, 50);
  // The cursor goes into the box on the key's way down, before the editor even chooses "unsure":
  // what the reviewer types right after 3 lands in the box, however fast (focused on its way up, the
  // first letters had gone to the page as hotkeys). The 3 itself is not typed (preventDefault); the
  // editor's hotkey still sees it, aimed at the page, and chooses "unsure".
  window.addEventListener("keydown", (e) => {
    if (e.key !== "3" || e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    const t = e.target;
    if (t instanceof HTMLElement && (/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) && t.type !== "radio" || t.isContentEditable)) return;
    if (!document.querySelector('input[type=radio][name="unsure"]')) return;
    const box = [...document.querySelectorAll(BOX)].find((b) => b.offsetParent !== null);
    if (!box) return;
    e.preventDefault();
    box.focus();
  }, true);
  window.addEventListener("keyup", (e) => {
    const t = e.target;
    // Closing the editor's warning (Enter or Escape on its OK button) returns to the box.
    if ((e.key === "Escape" || e.key === "Enter") && t instanceof HTMLElement && t.closest(".ant-modal")) {
      focusBoxIfUnsure();
      return;
    }
    if (e.key !== "3" || e.ctrlKey || e.metaKey || e.altKey) return;
    if (t instanceof HTMLElement && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) && t.type !== "radio") return;
    focusBoxIfUnsure();
  }, true);

  // Where the reviewer stands in their round: "Task 13 of 289 (277 left)" on every page of a
  // project, read from the project (its tasks, and those with an answer: this reviewer's own
  // project on their own server), again after each submit.
  const progress = () => {
    const m = location.pathname.match(/^\/projects\/(\d+)/);
    let badge = document.getElementById("annotate-progress");
    if (!m) { if (badge) badge.remove(); return; }
    fetch(`/api/projects/${m[1]}/`, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : null))
      .then((p) => {
        if (!p || typeof p.task_number !== "number") return;
        const total = p.task_number;
        const done = Math.min(total, p.num_tasks_with_annotations || 0);
        if (!badge) {
          badge = document.createElement("div");
          badge.id = "annotate-progress";
          badge.setAttribute("role", "status");
          document.body.appendChild(badge);
        }
        badge.textContent = done >= total
          ? `All ${total} tasks answered`
          : `Task ${done + 1} of ${total} (${total - done} left)`;
      })
      .catch(() => {});
  };
  const later = () => setTimeout(progress, 800);
  // A line at the top of the page for what the reviewer must know about their answer.
  const notice = (text) => {
    let box = document.getElementById("annotate-notice");
    if (!text) { if (box) box.remove(); return; }
    if (!box) {
      box = document.createElement("div");
      box.id = "annotate-notice";
      box.setAttribute("role", "alert");
      document.body.appendChild(box);
    }
    box.textContent = text;
  };
  const WAKING = "Saving your answer: your server was asleep and is waking up (10-20 s). Keep this page open.";
  const UNSURE_SAVED = "Your answer may or may not have been saved (the server stopped while saving it): reload "
    + "the task and look before answering again.";
  // Counted again as soon as an answer is saved (the page's own request, seen as it returns); a save that
  // waits for the server to wake says so, and one the server did not answer says what to do.
  const pageFetch = window.fetch;
  window.fetch = function (input, init) {
    const answer = pageFetch.apply(this, arguments);
    try {
      const url = typeof input === "string" ? input : (input && input.url) || "";
      const method = ((init && init.method) || (input && input.method) || "GET").toUpperCase();
      if (method !== "GET" && /\/api\/(tasks\/\d+\/annotations|annotations\/\d+)/.test(url)) {
        const slow = setTimeout(() => notice(WAKING), 1500);
        answer.then((r) => {
          clearTimeout(slow);
          if (r.status === 503) { notice(UNSURE_SAVED); return; }
          if (document.getElementById("annotate-notice")?.textContent === WAKING) notice(null);
          setTimeout(progress, 50);
        }, () => { clearTimeout(slow); notice(UNSURE_SAVED); });
      }
    } catch (e) { /* the page's request goes on as it was */ }
    return answer;
  };
  window.addEventListener("load", progress);
  window.addEventListener("popstate", later);
  window.addEventListener("keyup", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) later(); }, true);
  window.addEventListener("click", (e) => {
    const b = e.target instanceof HTMLElement ? e.target.closest("button") : null;
    if (b && /^(Submit|Update|Skip)$/.test((b.textContent || "").trim())) later();
  }, true);
  setInterval(progress, 15000);  // the page changes its address without reloading
})();
