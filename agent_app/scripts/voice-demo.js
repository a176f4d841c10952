// The voice demo page: a session from the page's server, the microphone through an
// AudioWorklet as 16 kHz PCM over the WebSocket, and the agent's PCM played back. While
// the caller speaks, the partial transcript is shown in place (replaced by the final
// one); a meter shows the microphone's level; each reply's latency appears under it. A
// reply the model still streams comes in several agent.speaking frames: one line; the
// assistant's tool calls come as agent.note frames. The admin's "Im Browser testen" uses
// it too, naming its own session endpoint (data-session).
(function () {
  "use strict";
  const script = document.currentScript;
  const startButton = document.getElementById("start");
  const stopButton = document.getElementById("stop");
  const statusLine = document.getElementById("status");
  const log = document.getElementById("log");
  const level = document.getElementById("level");
  let socket = null, context = null, stream = null, playingUntil = 0, sources = [], partialLine = null;
  let agentLine = null;  // the reply being spoken: a model that streams adds its sentences
  // The agent takes audio at most twice as fast as real time after a 1 s burst: what was
  // heard while the socket connected (its last 5 s at most) goes out 0.5 s at once, then
  // one kept frame beside each new one until none is left.
  const WAITING_FRAMES = 50, BURST_FRAMES = 5;

  function say(kind, text) {
    const line = document.createElement("p");
    line.className = kind;
    line.textContent = text;
    log.appendChild(line);
    return line;
  }

  function partial(text) {  // the caller's words so far, in one line that grows
    if (!partialLine) partialLine = say("caller partial", text);
    else partialLine.textContent = text;
  }

  function final(text) {
    if (partialLine) partialLine.remove();
    partialLine = null;
    say("caller transcript-final", text);
  }

  function speaking(text) {
    if (agentLine) agentLine.textContent += " " + text;
    else agentLine = say("agent", text);
  }

  function latency(frame) {
    say("latency", "Antwort nach " + (frame.totalMs / 1000).toFixed(2) + " s (Ende der Äußerung " +
        frame.endOfTurnMs + " ms, Erkennung " + frame.recognitionMs + " ms, Antwort " + frame.thinkingMs +
        " ms, Sprachausgabe " + frame.synthesisMs + " ms)");
  }

  function meter(samples) {  // the level of a 100 ms frame: its RMS, on a square-root scale
    let sum = 0;
    for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
    level.value = Math.min(1, Math.sqrt(Math.sqrt(sum / samples.length) / 32768) * 2);
  }

  function play(buffer) {
    const samples = new Int16Array(buffer);
    const audio = context.createBuffer(1, samples.length, 16000);
    const channel = audio.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 32768;
    const source = context.createBufferSource();
    source.buffer = audio;
    source.connect(context.destination);
    playingUntil = Math.max(playingUntil, context.currentTime);
    source.start(playingUntil);
    playingUntil += audio.duration;
    sources.push(source);
    source.onended = function () { sources = sources.filter(function (s) { return s !== source; }); };
  }

  function silence() {  // barge-in: drop what is still queued
    sources.forEach(function (source) { try { source.stop(); } catch (e) { /* already ended */ } });
    sources = [];
    playingUntil = 0;
  }

  function onFrame(event) {
    if (typeof event.data !== "string") { play(event.data); return; }
    const frame = JSON.parse(event.data);
    if (frame.type === "session.started") statusLine.textContent = "Verbunden (" + frame.callId + ").";
    else if (frame.type === "agent.speaking") speaking(frame.text);
    else if (frame.type === "agent.done") agentLine = null;
    else if (frame.type === "agent.interrupted") { agentLine = null; silence(); say("system", "(unterbrochen)"); }
    else if (frame.type === "transcript.partial") partial(frame.text);
    else if (frame.type === "transcript.final") final(frame.text);
    else if (frame.type === "turn.latency") latency(frame);
    else if (frame.type === "agent.note") say("system tool-call", frame.text);
    else if (frame.type === "error") say("system", "Fehler: " + frame.code + " – " + frame.message);
  }

  async function start() {
    startButton.disabled = true;
    statusLine.textContent = "Verbinde …";
    try {
      const token = document.querySelector('meta[name="csrf-token"]').content;
      // The demo page's grants, or the one the page names (the admin's "Im Browser testen").
      const answer = await fetch(script.dataset.session || "voice-demo/session",
                                 {method: "POST", headers: {"X-CSRFToken": token}, credentials: "same-origin"});
      const grant = await answer.json();
      if (!answer.ok) throw new Error(grant.error ? grant.error.message : answer.status);
      // The worklet is ready before the microphone opens, and what the microphone hears
      // while the socket still connects (a loaded server accepts late) is kept and sent
      // once it opens: a caller who speaks as soon as they click loses no word.
      context = new AudioContext();
      await context.audioWorklet.addModule(script.dataset.worklet);
      const worklet = new AudioWorkletNode(context, "pcm-resampler");
      stream = await navigator.mediaDevices.getUserMedia({
        audio: {channelCount: 1, echoCancellation: true, noiseSuppression: true}});
      context.createMediaStreamSource(stream).connect(worklet);
      const waiting = [];  // 100 ms frames not sent yet, oldest first
      const sendWaiting = function (frames) {
        waiting.splice(0, frames).forEach(function (pcm) { socket.send(pcm); });
      };
      socket = new WebSocket(grant.url);
      socket.binaryType = "arraybuffer";
      socket.onopen = function () { sendWaiting(BURST_FRAMES); };
      socket.onmessage = onFrame;
      socket.onclose = function (event) { statusLine.textContent = "Beendet (" + event.code + ")."; stop(); };
      worklet.port.onmessage = function (event) {
        meter(new Int16Array(event.data));
        if (!socket || socket.readyState > WebSocket.OPEN) return;
        waiting.push(event.data);
        if (socket.readyState === WebSocket.OPEN) sendWaiting(2);  // this frame and one kept
        else if (waiting.length > WAITING_FRAMES) waiting.shift();
      };
      stopButton.disabled = false;
    } catch (error) {
      stop();
      statusLine.textContent = "Fehler: " + error.message;
    }
  }

  function stop() {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({type: "end"}));
    if (stream) stream.getTracks().forEach(function (track) { track.stop(); });
    if (context) context.close();
    socket = null; stream = null; context = null; partialLine = null;
    level.value = 0;
    stopButton.disabled = true;
    startButton.disabled = false;
  }

  startButton.addEventListener("click", start);
  stopButton.addEventListener("click", stop);
}());
