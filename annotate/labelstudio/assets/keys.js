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
})();
