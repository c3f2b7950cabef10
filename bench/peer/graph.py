"""The peer the bench measures beside the service: one async LangGraph node that asks the bench's
stub provider for a chat completion, as a LangGraph user would write it (bench/peer.ts serves it
with `langgraph dev`, in memory, without durability)."""

import os
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from openai import AsyncOpenAI

client = AsyncOpenAI(base_url=os.environ["PEER_MODEL_BASE_URL"], api_key="bench", max_retries=0, timeout=120)


class State(TypedDict):
    input: str
    output: str


async def answer(state: State) -> dict:
    reply = await client.chat.completions.create(model="stub-model", messages=[{"role": "user", "content": state["input"]}])
    return {"output": reply.choices[0].message.content or ""}


graph = StateGraph(State).add_node("answer", answer).add_edge(START, "answer").add_edge("answer", END).compile()
