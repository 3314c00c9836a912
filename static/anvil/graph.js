// Draws the fragment graph the page carries (json_script "anvil-graph-elements") with the
// vendored cytoscape; clicking a fragment opens its change page.
(function () {
  "use strict";
  function draw() {
    const box = document.getElementById("anvil-graph");
    const data = document.getElementById("anvil-graph-elements");
    if (!box || !data || typeof cytoscape !== "function") return;
    const elements = JSON.parse(data.textContent);
    const style = getComputedStyle(document.body);
    const text = style.getPropertyValue("--body-fg").trim() || "#333";
    const accent = style.getPropertyValue("--primary").trim() || "#79aec8";
    const quiet = style.getPropertyValue("--body-quiet-color").trim() || "#666";
    const graph = cytoscape({
      container: box,
      elements: elements,
      wheelSensitivity: 0.3,
      maxZoom: 1.5, // a handful of fragments is drawn at reading size, not blown up to fill
      minZoom: 0.05,
      style: [
        {
          selector: "node",
          style: {
            label: "data(id)",
            "background-color": accent,
            color: text,
            "font-size": 12,
            "text-valign": "bottom",
            "text-margin-y": 4,
            width: 18,
            height: 18,
          },
        },
        {
          selector: "node[?focus]",
          style: { "border-width": 3, "border-color": text, width: 26, height: 26 },
        },
        {
          selector: "edge",
          style: {
            label: "data(label)",
            width: 1.5,
            "line-color": quiet,
            "target-arrow-color": quiet,
            "target-arrow-shape": "triangle",
            "curve-style": "bezier",
            "font-size": 10,
            color: quiet,
            "text-rotation": "autorotate",
            "text-background-color": style.getPropertyValue("--body-bg").trim() || "#fff",
            "text-background-opacity": 1,
            "text-background-padding": 2,
          },
        },
      ],
      layout: elements.nodes.length > 1
        ? { name: "cose", animate: false, padding: 40, idealEdgeLength: () => 140 }
        : { name: "grid", padding: 40 },
    });
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
