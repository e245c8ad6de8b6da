/**
 * A tiny stand-in for the browser, just enough for app.js: elements found
 * by id in the real index.html, createElement, events, storage, history.
 * Not a DOM implementation: innerHTML is kept as a string, not parsed.
 */

import { readFileSync } from "node:fs";

export class FakeStorage {
  constructor() {
    this.map = new Map();
  }
  getItem(k) {
    return this.map.has(k) ? this.map.get(k) : null;
  }
  setItem(k, v) {
    this.map.set(k, String(v));
  }
  removeItem(k) {
    this.map.delete(k);
  }
}

export class FakeElement {
  constructor(doc, tag) {
    this.ownerDocument = doc;
    this.tagName = tag.toUpperCase();
    this.id = "";
    this.children = [];
    this.parent = null;
    this.attributes = new Map();
    this.listeners = new Map();
    this.style = {};
    this.dataset = {};
    this.hidden = false;
    this.disabled = false;
    this.value = "";
    this.type = "";
    this.className = "";
    this._text = "";
    this._html = null;
    this.scrollTop = 0;
    this.scrollHeight = 0;
    this.clientHeight = 0;
    const el = this;
    this.classList = {
      contains: (c) => el.className.split(/\s+/).includes(c),
      add: (c) => {
        if (!el.classList.contains(c)) el.className = `${el.className} ${c}`.trim();
      },
      remove: (c) => {
        el.className = el.className
          .split(/\s+/)
          .filter((x) => x && x !== c)
          .join(" ");
      },
      toggle: (c, force) => {
        const on = force === undefined ? !el.classList.contains(c) : Boolean(force);
        if (on) el.classList.add(c);
        else el.classList.remove(c);
        return on;
      },
    };
  }
  append(...nodes) {
    for (const n of nodes) {
      n.parent = this;
      this.children.push(n);
    }
    this._html = null;
  }
  prepend(...nodes) {
    for (const n of nodes) n.parent = this;
    this.children.unshift(...nodes);
    this._html = null;
  }
  replaceWith(...nodes) {
    const siblings = this.parent?.children;
    if (!siblings) return;
    const i = siblings.indexOf(this);
    for (const n of nodes) n.parent = this.parent;
    siblings.splice(i, 1, ...nodes);
  }
  replaceChildren(...nodes) {
    this.children = [];
    this._text = "";
    this.append(...nodes);
  }
  set textContent(v) {
    this.children = [];
    this._html = null;
    this._text = String(v);
  }
  get textContent() {
    if (this._html !== null) return this._html.replace(/<[^>]*>/g, "");
    return this._text + this.children.map((c) => c.textContent).join("");
  }
  set innerHTML(v) {
    this.children = [];
    this._text = "";
    this._html = String(v);
  }
  get innerHTML() {
    return this._html ?? "";
  }
  setAttribute(k, v) {
    this.attributes.set(k, String(v));
  }
  getAttribute(k) {
    return this.attributes.has(k) ? this.attributes.get(k) : null;
  }
  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }
  /** Fire an event; returns the event object (see defaultPrevented). */
  dispatch(type, props = {}) {
    const ev = {
      type,
      target: this,
      defaultPrevented: false,
      preventDefault() {
        this.defaultPrevented = true;
      },
      ...props,
    };
    for (const fn of this.listeners.get(type) ?? []) fn(ev);
    return ev;
  }
  focus() {
    this.ownerDocument.activeElement = this;
  }
  /** Every descendant, depth first. */
  *walk() {
    for (const c of this.children) {
      yield c;
      yield* c.walk();
    }
  }
}

export class FakeDocument {
  constructor(html) {
    this.byId = new Map();
    this.activeElement = null;
    this.documentElement = this.createElement("html");
    for (const m of html.matchAll(/<([a-z0-9]+)\b([^>]*)>/gi)) {
      const id = /\bid="([^"]+)"/.exec(m[2]);
      if (!id) continue;
      const el = this.createElement(m[1]);
      el.id = id[1];
      el.hidden = /\shidden(\s|=|$)/.test(m[2]);
      el.className = /\bclass="([^"]*)"/.exec(m[2])?.[1] ?? "";
      this.byId.set(el.id, el);
    }
  }
  getElementById(id) {
    return this.byId.get(id) ?? null;
  }
  createElement(tag) {
    return new FakeElement(this, tag);
  }
  /** SVG icons (icons.js): an element that remembers its namespace. */
  createElementNS(ns, tag) {
    const el = new FakeElement(this, tag);
    el.namespaceURI = ns;
    return el;
  }
}

/** A window over the real index.html; `fetch` is whatever the test passes. */
export function fakeWindow({ url = "http://127.0.0.1:8787/", fetch, localStorage, sessionStorage } = {}) {
  const html = readFileSync(new URL("../index.html", import.meta.url), "utf8");
  const u = new URL(url);
  const frames = [];
  const win = {
    document: new FakeDocument(html),
    location: { hash: u.hash, pathname: u.pathname, search: u.search },
    history: {
      calls: [],
      replaceState(state, title, next) {
        win.history.calls.push(next);
        const n = new URL(next, u);
        win.location.hash = n.hash;
        win.location.pathname = n.pathname;
        win.location.search = n.search;
      },
    },
    localStorage: localStorage ?? new FakeStorage(),
    sessionStorage: sessionStorage ?? new FakeStorage(),
    innerHeight: 800,
    fetch,
    listeners: new Map(),
    addEventListener(type, fn) {
      if (!win.listeners.has(type)) win.listeners.set(type, []);
      win.listeners.get(type).push(fn);
    },
    /** Fire a window event (e.g. "hashchange"). */
    dispatch(type) {
      for (const fn of win.listeners.get(type) ?? []) fn({ type });
    },
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    navigator: {},
    requestAnimationFrame(fn) {
      frames.push(fn);
      return frames.length;
    },
    /** Run the queued animation frames. */
    flushFrames() {
      while (frames.length) frames.shift()(0);
    },
  };
  return win;
}
