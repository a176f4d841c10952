// OpenAI's npm package against Stimmwerk's /v1, as a Node.js developer uses it:
// node openai_check.mjs <base URL of /v1> <token> <chat model> <stt model> <WAV file>
// Prints one JSON object: what each call answered (or its error), for the Python test
// (tests/gateway_app/test_openai_node.py) to judge.
import { readFileSync } from "node:fs";
import OpenAI, { toFile } from "openai";

const [baseURL, apiKey, chatModel, sttModel, wavPath] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });
const results = {};

async function step(name, run) {
  try {
    results[name] = { ok: true, value: await run() };
  } catch (error) {
    results[name] = { ok: false, status: error.status ?? null, code: error.code ?? null, message: String(error.message) };
  }
}

await step("models", async () => (await client.models.list()).data.map((model) => model.id));
await step("chat", async () => {
  const answer = await client.chat.completions.create({
    model: chatModel,
    messages: [{ role: "user", content: "Wann haben Sie geöffnet? Antworte als JSON." }],
    top_p: 0.9, stop: ["\n\n"], response_format: { type: "json_object" }, seed: 7, user: "node-check", n: 1,
    temperature: 0.2, max_tokens: 60,
  });
  return { model: answer.model, content: answer.choices[0].message.content, finish: answer.choices[0].finish_reason };
});
await step("transcription", async () => {
  const file = await toFile(readFileSync(wavPath), "frage.wav", { type: "audio/wav" });
  return (await client.audio.transcriptions.create({ model: sttModel, file, language: "de" })).text;
});
await step("speech", async () => {
  const response = await client.audio.speech.create({
    model: "tts-1", voice: "alloy", input: "Guten Tag, hier ist die Praxis Weber.", response_format: "mp3",
  });
  const audio = Buffer.from(await response.arrayBuffer());
  return { bytes: audio.length, head: audio.subarray(0, 4).toString("hex"), type: response.headers.get("content-type") };
});
process.stdout.write(JSON.stringify(results));
