// Draws the fragment graph the page carries (json_script "anvil-graph-elements") with the
// vendored cytoscape, laid out by its fcose extension, every fragment kept clear of the others
// by webcola; clicking a fragment opens its change page.
(function () {
  "use strict";
  const FONT_SIZE = 12; // px, a fragment's key
  const EDGE_FONT_SIZE = 10; // px, an edge's relation
  const PILL_PADDING = 8; // px each side of a key, inside its fragment's shape
  const PILL_HEIGHT = 24;
  const EDGE_SLACK = 56; // px of line an edge keeps beside its relation, between the two fragments
  const FIT_PADDING = 24;
  const BOX_MARGIN = 4; // px kept clear around each fragment

  const measuring = document.createElement("canvas").getContext("2d");

  function textWidth(text, size, family) {
    measuring.font = `${size}px ${family}`;
    return measuring.measureText(text).width;
  }

  // fcose pushes fragments apart but can leave some overlapping, many around a fragment that
  // links to dozens; webcola's removeOverlaps then moves each box the least it takes to
  // clear every other, a margin included.
  function separate(nodes) {
    const boxes = nodes.map((node) => node.boundingBox({ includeLabels: true }));
    const rectangles = boxes.map(
      (box) =>
        new cola.Rectangle(
          box.x1 - BOX_MARGIN,
          box.x2 + BOX_MARGIN,
          box.y1 - BOX_MARGIN,
          box.y2 + BOX_MARGIN,
        ),
    );
    cola.removeOverlaps(rectangles);
    nodes.positions((node, i) => ({
      x: node.position("x") + rectangles[i].cx() - (boxes[i].x1 + boxes[i].x2) / 2,
      y: node.position("y") + rectangles[i].cy() - (boxes[i].y1 + boxes[i].y2) / 2,
    }));
  }

  // The fit's zoom is set by the picture's longer side (relative to the canvas's shape);
  // stretching the other side until the two shapes match leaves that zoom as it is and gives
  // the fragments the room the canvas has, most of all on a phone's tall canvas. Stretching
  // only moves fragments further apart, so it never makes two overlap.
  function stretchToCanvas(graph) {
    const nodes = graph.nodes();
    const box = nodes.boundingBox();
    const canvas = (graph.width() - 2 * FIT_PADDING) / (graph.height() - 2 * FIT_PADDING);
    const picture = box.w / box.h;
    const across = picture < canvas ? canvas / picture : 1;
    const down = picture > canvas ? picture / canvas : 1;
    const centre = { x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 };
    nodes.positions((node) => ({
      x: centre.x + (node.position("x") - centre.x) * across,
      y: centre.y + (node.position("y") - centre.y) * down,
    }));
  }

  // The page's colours (the admin's custom properties), read anew when its theme changes.
  function stylesheet(family) {
    const style = getComputedStyle(document.body);
    const colour = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
    return [
      {
        selector: "node",
        style: {
          label: "data(id)",
          shape: "round-rectangle",
          width: "data(width)",
          height: PILL_HEIGHT,
          "background-color": colour("--darkened-bg", "#f8f8f8"),
          "border-width": 1.5,
          "border-color": colour("--link-fg", "#447e9b"),
          color: colour("--body-fg", "#333"),
          "font-family": family,
          "font-size": FONT_SIZE,
          "text-valign": "center",
          "text-halign": "center",
        },
      },
      {
        selector: "node[?focus]",
        style: { "border-width": 3, "border-color": colour("--body-fg", "#333") },
      },
      {
        selector: "edge",
        style: {
          label: "data(label)",
          width: 1.5,
          "line-color": colour("--body-quiet-color", "#666"),
          "target-arrow-color": colour("--body-quiet-color", "#666"),
          "target-arrow-shape": "triangle",
          "curve-style": "bezier",
          "font-family": family,
          "font-size": EDGE_FONT_SIZE,
          color: colour("--body-quiet-color", "#666"),
          "text-rotation": "autorotate",
          "text-background-color": colour("--body-bg", "#fff"),
          "text-background-opacity": 1,
          "text-background-padding": 2,
          "text-background-shape": "round-rectangle",
          "min-zoomed-font-size": 7, // a relation too small to read is left out until zoomed in
        },
      },
    ];
  }

  function draw() {
    const box = document.getElementById("anvil-graph");
    const data = document.getElementById("anvil-graph-elements");
    if (!box || !data || typeof cytoscape !== "function" || typeof cola !== "object") return;
    const elements = JSON.parse(data.textContent);
    const family = getComputedStyle(document.body).fontFamily || "sans-serif";
    for (const node of elements.nodes) {
      node.data.width = textWidth(node.data.id, FONT_SIZE, family) + 2 * PILL_PADDING;
    }
    for (const edge of elements.edges) {
      edge.data.length = textWidth(edge.data.label, EDGE_FONT_SIZE, family) + EDGE_SLACK;
    }
    const graph = cytoscape({
      container: box,
      elements: elements,
      maxZoom: 1.6, // a handful of fragments is drawn large enough to read, not blown up to fill
      minZoom: 0.05,
      style: stylesheet(family),
    });
    performance.mark("anvil-graph-layout"); // its time is in the browser's performance timeline
    graph
      .layout({
        name: "fcose",
        animate: false,
        fit: false,
        nodeSeparation: 100,
        nodeRepulsion: 45000,
        idealEdgeLength: (edge) => edge.data("length"),
      })
      .run();
    stretchToCanvas(graph);
    separate(graph.nodes());
    graph.fit(graph.elements(), FIT_PADDING);
    performance.measure("anvil-graph-layout", "anvil-graph-layout");
    const restyle = new MutationObserver(() => graph.style(stylesheet(family)));
    restyle.observe(document.documentElement, { attributeFilter: ["data-theme"] });
    graph.on("tap", "node", (event) => {
      window.location.href = event.target.data("url");
    });
    box.dataset.ready = "true";
    window.anvilGraph = graph;
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
