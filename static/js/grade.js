// The grading page, keyboard first. Keys: 0–4 grade and go on (d: -1, distractor, where the pool has
// that grade), s skip, c can't judge (type why, Enter
// saves, Esc cancels), u or Backspace back to the previous pair, n note, g guidelines, ? help.
// Answers are posted with fetch and the server's next pair replaces the current one (no page reload).
// Without JavaScript the same form posts normally and the server redirects to the next pair.
(function () {
  "use strict";

  const root = document.getElementById("rating");
  if (!root) return;
  const help = document.getElementById("rating-help");
  const helpButton = document.getElementById("rating-help-open");
  const guidelines = document.getElementById("guidelines");
  let busy = false;

  if (helpButton && help) {
    helpButton.hidden = false;
    helpButton.addEventListener("click", () => help.showModal());
  }

  const gradeForm = () => root.querySelector("#grade-form");
  const state = () => root.querySelector(".grading");

  function focusPair() {
    window.scrollTo(0, 0);
    const target = root.querySelector("#document");
    if (target) target.focus({ preventScroll: true });
  }

  function showProblem(message) {
    let box = root.querySelector(".rating-notice");
    if (!box) {
      box = document.createElement("p");
      box.setAttribute("role", "status");
      const progress = root.querySelector(".rating-progress");
      (progress || root).insertAdjacentElement(progress ? "afterend" : "afterbegin", box);
    }
    box.className = "rating-notice error";
    box.textContent = message;
  }

  // Load a fragment from the server into the page. push: add a history entry for the new URL.
  async function load(url, options, push) {
    if (busy) return;
    busy = true;
    root.classList.add("busy");
    try {
      const response = await fetch(url, {
        ...options,
        credentials: "same-origin",
        headers: { "X-Rating-Fragment": "1" },
      });
      const type = response.headers.get("Content-Type") || "";
      const next = response.headers.get("X-Rating-Url");
      if (!next || !type.startsWith("text/html")) {
        // Logged out, forbidden, or a server error: let the browser show that page.
        window.location.assign(response.redirected ? response.url : url);
        return;
      }
      root.innerHTML = await response.text();
      if (next !== window.location.pathname) {
        if (push) history.pushState({ rating: true }, "", next);
        else history.replaceState({ rating: true }, "", next);
      }
      focusPair();
    } catch (error) {
      showProblem("The server could not be reached; nothing was saved. Try again.");
    } finally {
      busy = false;
      root.classList.remove("busy");
    }
  }

  root.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.id !== "grade-form") return;
    event.preventDefault();
    // getAttribute: form.action would be the buttons named "action", not the URL.
    load(form.getAttribute("action"), { method: "POST", body: new FormData(form, event.submitter) }, true);
  });

  root.addEventListener("click", (event) => {
    const link = event.target.closest("#back-link");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    load(link.href, { method: "GET" }, true);
  });

  window.addEventListener("popstate", () => load(window.location.href, { method: "GET" }, false));

  function submitWith(button) {
    const form = gradeForm();
    if (form && button) form.requestSubmit(button);
  }

  function openCantJudge() {
    const cant = root.querySelector("#cant");
    if (!cant) return;
    cant.open = true;
    root.querySelector("#reason").focus();
  }

  function goBack() {
    const current = state();
    const url = current && current.dataset.previousUrl;
    if (url) load(url, { method: "GET" }, true);
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    const typing = target instanceof Element && target.closest("textarea, input, select, [contenteditable]");
    if (help && help.open) {
      if (event.key === "?") help.close();
      return; // the dialog closes itself on Esc
    }
    if (typing) {
      if (event.key === "Escape") {
        target.blur();
        const cant = target.closest("#cant");
        if (cant) cant.open = false;
      } else if (target.id === "reason" && event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        submitWith(root.querySelector("#cant-button"));
      }
      return;
    }
    if (event.repeat) return;
    const key = event.key;
    if (key >= "0" && key <= "4" && key.length === 1) {
      event.preventDefault();
      submitWith(root.querySelector(`#grade-form button[name="grade"][value="${key}"]`));
    } else if (key === "d") {
      // Only pools with the distractor grade have its button; elsewhere the key does nothing.
      const distractor = root.querySelector('#grade-form button[name="grade"][value="-1"]');
      if (distractor) {
        event.preventDefault();
        submitWith(distractor);
      }
    } else if (key === "s") {
      event.preventDefault();
      submitWith(root.querySelector("#skip-button"));
    } else if (key === "c") {
      event.preventDefault();
      openCantJudge();
    } else if (key === "u" || key === "Backspace") {
      event.preventDefault();
      goBack();
    } else if (key === "n") {
      const note = root.querySelector("#note");
      if (note) {
        event.preventDefault();
        note.focus();
      }
    } else if (key === "g" && guidelines) {
      event.preventDefault();
      guidelines.open = !guidelines.open;
    } else if (key === "?" && help) {
      event.preventDefault();
      help.showModal();
    }
  });
})();
