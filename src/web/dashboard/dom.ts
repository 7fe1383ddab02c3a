// The only way the dashboard builds DOM. Children are nodes or strings, and strings always
// become text nodes: client-sent text (app names, error texts) can never be parsed as HTML.
// There is deliberately no innerHTML anywhere in the dashboard.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(key.replace(/^on/, ""), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, ...children);
  return el;
}

function append(el: Element | DocumentFragment, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's content in one step (no flash of an empty element). */
export function replace(el: Element, ...children: Child[]): void {
  const frag = document.createDocumentFragment();
  append(frag, ...children);
  el.replaceChildren(frag);
}
