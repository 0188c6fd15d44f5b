package envserver

import "encoding/json"

// schemas is GET /schema: OpenEnv's SchemaResponse, the JSON Schemas of an
// action, an observation and the state.
func schemas() map[string]json.RawMessage {
	return map[string]json.RawMessage{"action": json.RawMessage(actionSchema), "observation": json.RawMessage(observationSchema), "state": json.RawMessage(stateSchema)}
}

const actionSchema = `{
  "title": "AntidriftAction",
  "description": "One assistant turn: a tool call (tool_name + arguments), several calls (tool_calls, OpenAI shape), the final answer (type final_answer + content, or final_answer) which ends the episode, or a plain message (text frameworks).",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "type": {"enum": ["tool_call", "final_answer", "message"]},
    "tool_name": {"type": "string"},
    "arguments": {"type": ["object", "string"]},
    "tool_calls": {"type": "array", "items": {"type": "object", "required": ["function"],
      "properties": {"id": {"type": "string"}, "type": {"const": "function"},
        "function": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "arguments": {"type": ["object", "string"]}}}}}},
    "content": {"type": "string"},
    "final_answer": {"type": "string"},
    "reasoning": {"type": "string"},
    "finish_reason": {"type": "string"},
    "usage": {"type": "object", "properties": {"prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}},
    "metadata": {"type": "object"}
  }
}`

const observationSchema = `{
  "title": "AntidriftObservation",
  "type": "object",
  "required": ["episode_id", "traj_id", "scenario_id", "step", "messages", "tools", "done"],
  "properties": {
    "episode_id": {"type": "string"},
    "traj_id": {"type": "string"},
    "scenario_id": {"type": "string"},
    "step": {"type": "integer", "minimum": 0},
    "messages": {"type": "array", "description": "OpenAI chat messages as the model's next request holds them", "items": {"type": "object"}},
    "tools": {"type": "array", "description": "visible tools, OpenAI function schemas", "items": {"type": "object"}},
    "tool_results": {"type": "array", "items": {"type": "object"}},
    "errors": {"type": "array", "items": {"type": "string"}},
    "done": {"type": "boolean"},
    "labels": {"type": "object", "properties": {"status": {"type": "string"}, "error": {"type": "string"}, "success": {"type": "boolean"}, "judge": {"type": "object"}, "drift": {"type": "boolean"}, "drift_steps": {"type": "array", "items": {"type": "integer"}}, "drift_matches": {"type": "array", "items": {"type": "object"}}}},
    "rewards": {"type": "object", "properties": {"components": {"type": "object", "additionalProperties": {"type": "number"}}, "total": {"type": "number"}, "config": {"type": "string"}, "process": {"type": "array", "items": {"type": "object", "properties": {"turn": {"type": "integer"}, "reward": {"type": "number"}}}}}}
  }
}`

const stateSchema = `{
  "title": "AntidriftState",
  "type": "object",
  "required": ["episode_id", "step_count"],
  "properties": {
    "episode_id": {"type": "string"},
    "step_count": {"type": "integer", "minimum": 0},
    "traj_id": {"type": "string"},
    "scenario_id": {"type": "string"},
    "rollout": {"type": "integer"},
    "seed": {"type": "integer"},
    "protocol": {"enum": ["http", "ws", "mcp"]},
    "client": {"type": "string"},
    "done": {"type": "boolean"},
    "status": {"type": "string"}
  }
}`
