package export

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/parquet-go/parquet-go"
)

// Row is the set of tables the package writes.
type Row interface {
	dataset.DPORow | dataset.KTORow | dataset.RewardRow | dataset.TrajectoryRow
}

// kind is the shape of a column, shared by the Parquet, Arrow and JSONL
// writers so that the three files of one table always agree.
type kind uint8

const (
	kString     kind = iota // PLAIN-encoded string (ids, free text)
	kDictString             // dictionary-encoded string (few distinct values)
	kBool
	kInt64
	kFloat64
	kOptFloat64 // margin: present only on request, never null once requested
	kMessages   // list of JSON objects (chat messages, tool schemas)
	kStrings    // list of dictionary-encoded strings
	kInt64s
	kFloat64s
)

// column is one column of a table: its name, shape and accessor.
type column[R any] struct {
	name    string
	kind    kind
	str     func(*R) string
	boolean func(*R) bool
	i64     func(*R) int64
	f64     func(*R) float64
	optf    func(*R) *float64
	msgs    func(*R) []json.RawMessage
	strs    func(*R) []string
	i64s    func(*R) []int64
	f64s    func(*R) []float64
}

func cStr[R any](name string, f func(*R) string) column[R] {
	return column[R]{name: name, kind: kString, str: f}
}
func cDict[R any](name string, f func(*R) string) column[R] {
	return column[R]{name: name, kind: kDictString, str: f}
}
func cBool[R any](name string, f func(*R) bool) column[R] {
	return column[R]{name: name, kind: kBool, boolean: f}
}
func cInt[R any](name string, f func(*R) int64) column[R] {
	return column[R]{name: name, kind: kInt64, i64: f}
}
func cFloat[R any](name string, f func(*R) float64) column[R] {
	return column[R]{name: name, kind: kFloat64, f64: f}
}
func cMsgs[R any](name string, f func(*R) []json.RawMessage) column[R] {
	return column[R]{name: name, kind: kMessages, msgs: f}
}
func cStrs[R any](name string, f func(*R) []string) column[R] {
	return column[R]{name: name, kind: kStrings, strs: f}
}
func cInts[R any](name string, f func(*R) []int64) column[R] {
	return column[R]{name: name, kind: kInt64s, i64s: f}
}
func cFloats[R any](name string, f func(*R) []float64) column[R] {
	return column[R]{name: name, kind: kFloat64s, f64s: f}
}

func dpoColumns(margin bool) []column[dataset.DPORow] {
	type R = dataset.DPORow
	cols := []column[R]{
		cMsgs("prompt", func(r *R) []json.RawMessage { return r.Prompt }),
		cMsgs("chosen", func(r *R) []json.RawMessage { return r.Chosen }),
		cMsgs("rejected", func(r *R) []json.RawMessage { return r.Rejected }),
		cMsgs("tools", func(r *R) []json.RawMessage { return r.Tools }),
		cStr("pair_id", func(r *R) string { return r.PairID }),
		cDict("scenario_id", func(r *R) string { return r.ScenarioID }),
		cDict("domain", func(r *R) string { return r.Domain }),
		cDict("split", func(r *R) string { return r.Split }),
		cDict("pair_type", func(r *R) string { return r.PairType }),
		cDict("framework", func(r *R) string { return r.Framework }),
		cDict("tool_format", func(r *R) string { return r.ToolFormat }),
		cStr("chosen_traj_id", func(r *R) string { return r.ChosenTrajID }),
		cStr("rejected_traj_id", func(r *R) string { return r.RejectedTrajID }),
		cDict("chosen_checkpoint", func(r *R) string { return r.ChosenCheckpoint }),
		cDict("rejected_checkpoint", func(r *R) string { return r.RejectedCheckpoint }),
		cInt("divergence_step", func(r *R) int64 { return int64(r.DivergenceStep) }),
		cFloat("chosen_reward", func(r *R) float64 { return r.ChosenReward }),
		cFloat("rejected_reward", func(r *R) float64 { return r.RejectedReward }),
		cFloat("reward_gap", func(r *R) float64 { return r.RewardGap }),
		cStrs("drift_types", func(r *R) []string { return r.DriftTypes }),
		cStrs("violation_kinds", func(r *R) []string { return r.ViolationKinds }),
		cStrs("provisions", func(r *R) []string { return r.Provisions }),
		cInts("chosen_train", func(r *R) []int64 { return r.ChosenTrain }),
		cInts("rejected_train", func(r *R) []int64 { return r.RejectedTrain }),
		cInt("prompt_tokens_est", func(r *R) int64 { return r.PromptTokensEst }),
		cInt("chosen_tokens_est", func(r *R) int64 { return r.ChosenTokensEst }),
		cInt("rejected_tokens_est", func(r *R) int64 { return r.RejectedTokensEst }),
		cDict("schema_version", func(r *R) string { return r.SchemaVersion }),
	}
	if margin {
		cols = append(cols, column[R]{name: "margin", kind: kOptFloat64, optf: func(r *R) *float64 { return r.Margin }})
	}
	return cols
}

func ktoColumns() []column[dataset.KTORow] {
	type R = dataset.KTORow
	return []column[R]{
		cMsgs("prompt", func(r *R) []json.RawMessage { return r.Prompt }),
		cMsgs("completion", func(r *R) []json.RawMessage { return r.Completion }),
		cBool("label", func(r *R) bool { return r.Label }),
		cMsgs("tools", func(r *R) []json.RawMessage { return r.Tools }),
		cInt("turn", func(r *R) int64 { return r.Turn }),
		cStr("traj_id", func(r *R) string { return r.TrajID }),
		cDict("scenario_id", func(r *R) string { return r.ScenarioID }),
		cDict("domain", func(r *R) string { return r.Domain }),
		cDict("split", func(r *R) string { return r.Split }),
		cDict("checkpoint", func(r *R) string { return r.Checkpoint }),
		cDict("framework", func(r *R) string { return r.Framework }),
		cDict("tool_format", func(r *R) string { return r.ToolFormat }),
		cBool("success", func(r *R) bool { return r.Success }),
		cBool("drift", func(r *R) bool { return r.Drift }),
		cFloat("reward", func(r *R) float64 { return r.Reward }),
		cInt("prompt_tokens_est", func(r *R) int64 { return r.PromptTokensEst }),
		cInt("completion_tokens_est", func(r *R) int64 { return r.CompletionTokensEst }),
		cDict("schema_version", func(r *R) string { return r.SchemaVersion }),
	}
}

func rewardColumns() []column[dataset.RewardRow] {
	type R = dataset.RewardRow
	return []column[R]{
		cMsgs("prompt", func(r *R) []json.RawMessage { return r.Prompt }),
		cMsgs("completion", func(r *R) []json.RawMessage { return r.Completion }),
		cMsgs("tools", func(r *R) []json.RawMessage { return r.Tools }),
		cDict("group_id", func(r *R) string { return r.GroupID }),
		cFloat("reward", func(r *R) float64 { return r.Reward }),
		cFloat("advantage", func(r *R) float64 { return r.Advantage }),
		cFloats("process_rewards", func(r *R) []float64 { return r.ProcessRewards }),
		cInt("turn", func(r *R) int64 { return r.Turn }),
		cStr("traj_id", func(r *R) string { return r.TrajID }),
		cDict("scenario_id", func(r *R) string { return r.ScenarioID }),
		cDict("domain", func(r *R) string { return r.Domain }),
		cDict("split", func(r *R) string { return r.Split }),
		cDict("checkpoint", func(r *R) string { return r.Checkpoint }),
		cDict("framework", func(r *R) string { return r.Framework }),
		cDict("tool_format", func(r *R) string { return r.ToolFormat }),
		cBool("success", func(r *R) bool { return r.Success }),
		cBool("drift", func(r *R) bool { return r.Drift }),
		cStrs("boundary_tools", func(r *R) []string { return r.BoundaryTools }),
		cInt("prompt_tokens_est", func(r *R) int64 { return r.PromptTokensEst }),
		cInt("completion_tokens_est", func(r *R) int64 { return r.CompletionTokensEst }),
		cDict("schema_version", func(r *R) string { return r.SchemaVersion }),
	}
}

func trajectoryColumns() []column[dataset.TrajectoryRow] {
	type R = dataset.TrajectoryRow
	return []column[R]{
		cStr("traj_id", func(r *R) string { return r.TrajID }),
		cDict("run", func(r *R) string { return r.Run }),
		cDict("checkpoint", func(r *R) string { return r.Checkpoint }),
		cDict("policy", func(r *R) string { return r.Policy }),
		cDict("framework", func(r *R) string { return r.Framework }),
		cDict("tool_format", func(r *R) string { return r.ToolFormat }),
		cDict("scenario_id", func(r *R) string { return r.ScenarioID }),
		cDict("domain", func(r *R) string { return r.Domain }),
		cDict("split", func(r *R) string { return r.Split }),
		cInt("rollout", func(r *R) int64 { return int64(r.Rollout) }),
		cInt("seed", func(r *R) int64 { return r.Seed }),
		cMsgs("messages", func(r *R) []json.RawMessage { return r.Messages }),
		cMsgs("tools", func(r *R) []json.RawMessage { return r.Tools }),
		cDict("status", func(r *R) string { return r.Status }),
		cBool("success", func(r *R) bool { return r.Success }),
		cBool("drift", func(r *R) bool { return r.Drift }),
		cBool("clean", func(r *R) bool { return r.Clean }),
		cInts("drift_steps", func(r *R) []int64 { return r.DriftSteps }),
		cStrs("drift_types", func(r *R) []string { return r.DriftTypes }),
		cStrs("violation_kinds", func(r *R) []string { return r.ViolationKinds }),
		cStrs("provisions", func(r *R) []string { return r.Provisions }),
		cDict("judge_kind", func(r *R) string { return r.JudgeKind }),
		cFloat("judge_score", func(r *R) float64 { return r.JudgeScore }),
		cStr("judge_reason", func(r *R) string { return r.JudgeReason }),
		cInt("prompt_tokens", func(r *R) int64 { return r.PromptTokens }),
		cInt("completion_tokens", func(r *R) int64 { return r.CompletionTokens }),
		cDict("toolkit_version", func(r *R) string { return r.ToolkitVersion }),
		cDict("schema_version", func(r *R) string { return r.SchemaVersion }),
	}
}

// tableOf returns the table kind and columns of row type R.
func tableOf[R Row](margin bool) (string, []column[R]) {
	var cols any
	var table string
	switch any((*R)(nil)).(type) {
	case *dataset.DPORow:
		table, cols = TableDPO, dpoColumns(margin)
	case *dataset.KTORow:
		table, cols = TableKTO, ktoColumns()
	case *dataset.RewardRow:
		table, cols = TableRewards, rewardColumns()
	case *dataset.TrajectoryRow:
		table, cols = TableTrajectories, trajectoryColumns()
	}
	return table, cols.([]column[R])
}

// splitOf returns a row's split.
func splitOf[R Row](r *R) string {
	switch v := any(r).(type) {
	case *dataset.DPORow:
		return v.Split
	case *dataset.KTORow:
		return v.Split
	case *dataset.RewardRow:
		return v.Split
	case *dataset.TrajectoryRow:
		return v.Split
	}
	return ""
}

// Table kinds, as written in the file metadata and the dataset card.
const (
	TableDPO          = "dpo"
	TableKTO          = "kto"
	TableRewards      = "rewards"
	TableTrajectories = "trajectories"
)

// ColumnNames lists the columns of the table of row type R, in file order.
func ColumnNames[R Row](margin bool) []string {
	_, cols := tableOf[R](margin)
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

// orderedGroup is a Parquet group whose fields keep the order given, so that
// files list their columns as the design does (parquet.Group sorts them by
// name).
type orderedGroup struct {
	parquet.Group
	order []string
}

func (g orderedGroup) Fields() []parquet.Field {
	fields := g.Group.Fields()
	byName := make(map[string]parquet.Field, len(fields))
	for _, f := range fields {
		byName[f.Name()] = f
	}
	out := make([]parquet.Field, len(g.order))
	for i, n := range g.order {
		out[i] = byName[n]
	}
	return out
}

// parquetNode is the explicit schema node of a column kind. Message columns
// are parquet.List(parquet.JSON()) built here, never from struct tags:
// parquet-go v0.32.0 writes empty lists for JSON list elements declared by
// tags. Strings are PLAIN or dictionary encoded (parquet-go's default,
// DELTA_LENGTH_BYTE_ARRAY, is rejected by older Spark and Iceberg readers).
func parquetNode(k kind) parquet.Node {
	plainString := parquet.Encoded(parquet.String(), &parquet.Plain)
	dictString := parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
	switch k {
	case kString:
		return plainString
	case kDictString:
		return dictString
	case kBool:
		return parquet.Encoded(parquet.Leaf(parquet.BooleanType), &parquet.Plain)
	case kInt64:
		return parquet.Encoded(parquet.Leaf(parquet.Int64Type), &parquet.Plain)
	case kFloat64, kOptFloat64:
		return parquet.Encoded(parquet.Leaf(parquet.DoubleType), &parquet.Plain)
	case kMessages:
		// Dictionary-encoded: system and user messages and tool schemas
		// repeat across the rollouts of a scenario (zstd alone sees only
		// one page at a time).
		return parquet.List(parquet.Encoded(parquet.JSON(), &parquet.RLEDictionary))
	case kStrings:
		return parquet.List(dictString)
	case kInt64s:
		return parquet.List(parquet.Encoded(parquet.Leaf(parquet.Int64Type), &parquet.Plain))
	case kFloat64s:
		return parquet.List(parquet.Encoded(parquet.Leaf(parquet.DoubleType), &parquet.Plain))
	}
	panic(fmt.Sprintf("export: unknown column kind %d", k))
}

func parquetSchema[R any](table string, cols []column[R]) *parquet.Schema {
	g := orderedGroup{Group: parquet.Group{}}
	for _, c := range cols {
		g.Group[c.name] = parquetNode(c.kind)
		g.order = append(g.order, c.name)
	}
	return parquet.NewSchema(table, g)
}

// jsonType is the canonical arrow.json extension type over utf8, the type
// pyarrow (pa.json_()) and Hugging Face datasets (Json()) use.
var jsonType = func() *extensions.JSONType {
	t, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic(err)
	}
	return t
}()

func listOf(t arrow.DataType) arrow.DataType {
	return arrow.ListOfField(arrow.Field{Name: "element", Type: t, Nullable: false})
}

func arrowType(k kind) arrow.DataType {
	switch k {
	case kString, kDictString:
		return arrow.BinaryTypes.String
	case kBool:
		return arrow.FixedWidthTypes.Boolean
	case kInt64:
		return arrow.PrimitiveTypes.Int64
	case kFloat64, kOptFloat64:
		return arrow.PrimitiveTypes.Float64
	case kMessages:
		return listOf(jsonType)
	case kStrings:
		return listOf(arrow.BinaryTypes.String)
	case kInt64s:
		return listOf(arrow.PrimitiveTypes.Int64)
	case kFloat64s:
		return listOf(arrow.PrimitiveTypes.Float64)
	}
	panic(fmt.Sprintf("export: unknown column kind %d", k))
}

// arrowSchema is the Arrow schema of a table: the same columns, message
// columns as list<element: extension<arrow.json>>. Every column is
// non-nullable, as in the Parquet file (required columns and elements).
func arrowSchema[R any](cols []column[R]) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: arrowType(c.kind), Nullable: false}
	}
	return arrow.NewSchema(fields, nil)
}

// serializedArrowSchema is the value of the Parquet key "ARROW:schema" as
// pyarrow and pqarrow write it: the IPC stream of the schema alone, base64.
func serializedArrowSchema(s *arrow.Schema) (string, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
