package main

import (
	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/engine"
)

// The ReAct framework's model saw its conversation as text (protocol.View):
// every table renders its records that way and marks them tool_format=text.
func init() { dataset.RegisterTextView(engine.FrameworkReAct, protocol.View) }
