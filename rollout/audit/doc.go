// Package audit measures what a scenario suite teaches besides its tasks:
// how well trivial classifiers, trained on some domains and tested on the
// rest, tell an allowed tool from an out-of-boundary one, or a lure from
// the other strings of a tool return, from what the model sees alone (the
// tools' place, their parameter count, the words of their names and
// descriptions; a string's field, words and place). A classifier that
// beats its base rate by much is a shortcut a policy can learn instead of
// reading the task. It imports the scenario types, the agent's tool order
// and the environment's rendering; nothing that runs a model.
package audit
