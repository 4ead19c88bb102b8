// Elements from data: attributes and text nodes only, never markup.

/** An element with attributes and children (strings become text nodes). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children.map((c) => (c instanceof Node ? c : String(c))));
  return node;
}

/** The same in SVG. */
export function svgEl(tag, attributes = {}, ...children) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children.map((c) => (c instanceof Node ? c : String(c))));
  return node;
}
