/*
 * The quiet space behind the chat: 60 slowly drifting particles (warm whites,
 * amber, dusty blue), a breathing radial gradient and a fine noise texture,
 * drawn on <canvas id="space">.
 *
 * Under prefers-reduced-motion: reduce it draws one still frame and stops;
 * it also pauses while the tab is hidden.
 * window.silentstar.spaceRunning() tells whether the animation loop is running.
 */
(function () {
  "use strict";

  const silentstar = (window.silentstar = window.silentstar || {});
  let running = false;
  silentstar.spaceRunning = () => running;

  const canvas = document.getElementById("space");
  if (!canvas || !canvas.getContext) return;
  const ctx = canvas.getContext("2d", { alpha: false });
  if (!ctx) return;

  const BACKGROUND = "#0d0d10";
  const PARTICLE_COUNT = 60;
  const BREATH_SECONDS = 9; // one slow inhale and exhale
  const PALETTE = [
    [243, 234, 216], // warm white
    [236, 226, 206], // warm white
    [228, 220, 204], // warm white
    [214, 170, 104], // amber
    [196, 168, 130], // the warm accent
    [130, 148, 178], // dusty blue
    [112, 128, 160], // dusty blue
  ];

  const motion = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : null;
  let width = 0;
  let height = 0;
  let ratio = 1;
  let particles = [];
  let noisePattern = null;
  let frame = 0;
  let last = 0;
  let clock = 0; // seconds of animation, so a still frame and a paused one look alike

  function random(min, max) {
    return min + Math.random() * (max - min);
  }

  function makeParticle() {
    const colour = PALETTE[Math.floor(Math.random() * PALETTE.length)];
    const angle = random(0, Math.PI * 2);
    const speed = random(2, 9); // CSS px per second
    return {
      x: Math.random(),
      y: Math.random(),
      vx: Math.cos(angle) * speed,
      vy: Math.sin(angle) * speed - 1.5, // a faint upward drift
      radius: random(0.5, 1.9),
      alpha: random(0.25, 0.7),
      twinkle: random(0.15, 0.5), // cycles per second
      phase: random(0, Math.PI * 2),
      colour: colour,
    };
  }

  function makeNoise() {
    const size = 128;
    const tile = document.createElement("canvas");
    tile.width = size;
    tile.height = size;
    const tctx = tile.getContext("2d");
    const data = tctx.createImageData(size, size);
    for (let i = 0; i < data.data.length; i += 4) {
      const v = Math.floor(Math.random() * 255);
      data.data[i] = v;
      data.data[i + 1] = v;
      data.data[i + 2] = v;
      data.data[i + 3] = Math.floor(Math.random() * 18); // very faint
    }
    tctx.putImageData(data, 0, 0);
    return ctx.createPattern(tile, "repeat");
  }

  function resize() {
    ratio = Math.min(window.devicePixelRatio || 1, 2);
    width = window.innerWidth;
    height = window.innerHeight;
    canvas.width = Math.max(1, Math.round(width * ratio));
    canvas.height = Math.max(1, Math.round(height * ratio));
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    draw(); // a resized canvas is blank until drawn
  }

  function step(seconds) {
    for (const p of particles) {
      p.x += (p.vx * seconds) / width;
      p.y += (p.vy * seconds) / height;
      if (p.x < -0.02) p.x += 1.04;
      else if (p.x > 1.02) p.x -= 1.04;
      if (p.y < -0.02) p.y += 1.04;
      else if (p.y > 1.02) p.y -= 1.04;
    }
  }

  function draw() {
    ctx.globalCompositeOperation = "source-over";
    ctx.globalAlpha = 1;
    ctx.fillStyle = BACKGROUND;
    ctx.fillRect(0, 0, width, height);

    // The breath: a lavender glow above, a warm one below, swelling together.
    const breath = 0.5 - 0.5 * Math.cos((clock / BREATH_SECONDS) * Math.PI * 2);
    const reach = Math.max(width, height);
    const glow = ctx.createRadialGradient(
      width * 0.5, height * 0.32, 0,
      width * 0.5, height * 0.32, reach * (0.55 + 0.08 * breath)
    );
    glow.addColorStop(0, "rgba(139, 142, 200, " + (0.07 + 0.05 * breath).toFixed(3) + ")");
    glow.addColorStop(0.45, "rgba(139, 142, 200, " + (0.025 + 0.02 * breath).toFixed(3) + ")");
    glow.addColorStop(1, "rgba(13, 13, 16, 0)");
    ctx.fillStyle = glow;
    ctx.fillRect(0, 0, width, height);

    const warm = ctx.createRadialGradient(
      width * 0.5, height * 1.05, 0,
      width * 0.5, height * 1.05, reach * (0.5 + 0.05 * breath)
    );
    warm.addColorStop(0, "rgba(196, 168, 130, " + (0.05 + 0.03 * breath).toFixed(3) + ")");
    warm.addColorStop(1, "rgba(13, 13, 16, 0)");
    ctx.fillStyle = warm;
    ctx.fillRect(0, 0, width, height);

    ctx.globalCompositeOperation = "lighter";
    for (const p of particles) {
      const x = p.x * width;
      const y = p.y * height;
      const shimmer = 0.75 + 0.25 * Math.sin(clock * p.twinkle * Math.PI * 2 + p.phase);
      const alpha = p.alpha * shimmer;
      const [r, g, b] = p.colour;
      ctx.fillStyle = "rgba(" + r + "," + g + "," + b + "," + (alpha * 0.12).toFixed(3) + ")";
      ctx.beginPath();
      ctx.arc(x, y, p.radius * 4, 0, Math.PI * 2);
      ctx.fill();
      ctx.fillStyle = "rgba(" + r + "," + g + "," + b + "," + alpha.toFixed(3) + ")";
      ctx.beginPath();
      ctx.arc(x, y, p.radius, 0, Math.PI * 2);
      ctx.fill();
    }

    ctx.globalCompositeOperation = "source-over";
    if (noisePattern) {
      ctx.fillStyle = noisePattern;
      ctx.fillRect(0, 0, width, height);
    }
  }

  function tick(now) {
    if (!running) return;
    const seconds = last ? Math.min((now - last) / 1000, 0.1) : 0;
    last = now;
    clock += seconds;
    step(seconds);
    draw();
    frame = requestAnimationFrame(tick);
  }

  function reducedMotion() {
    return !!(motion && motion.matches);
  }

  function start() {
    if (running || reducedMotion() || document.hidden) return;
    running = true;
    last = 0;
    frame = requestAnimationFrame(tick);
  }

  function stop() {
    running = false;
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
  }

  function update() {
    if (reducedMotion()) {
      stop();
      draw(); // one still frame
    } else if (document.hidden) {
      stop();
    } else {
      start();
    }
  }

  particles = Array.from({ length: PARTICLE_COUNT }, makeParticle);
  noisePattern = makeNoise();
  clock = BREATH_SECONDS / 2;
  resize();

  window.addEventListener("resize", resize, { passive: true });
  document.addEventListener("visibilitychange", update);
  if (motion) {
    if (motion.addEventListener) motion.addEventListener("change", update);
    else if (motion.addListener) motion.addListener(update);
  }
  update();
})();
