package rewards

import "github.com/antidrift/antidrift/rollout/trajectory"

// Named is a trajectory's reward split into named components, as NeMo RL's
// multi-reward convention names them (a "reward/" prefix), for trainers
// that take the parts (env serve's episode ends):
//
//   - "reward/success": the outcome term α·S·(1−D);
//   - "reward/drift_penalty": −λ·Σ_v w(v);
//   - "reward/drift_penalty/SCHEME": each selected scheme's share of it.
//
// success + drift_penalty = Total; Process (one per assistant turn, at the
// message indexes Turns) sums to Total too.
type Named struct {
	Components map[string]float64
	Total      float64
	Turns      []int
	Process    []float64
}

// Named scores a record and names its components.
func (c Config) Named(r *trajectory.Record) (Named, error) {
	res, err := c.Score(r)
	if err != nil {
		return Named{}, err
	}
	n := Named{Components: map[string]float64{
		"reward/success":       res.Outcome,
		"reward/drift_penalty": -res.Penalty,
	}, Total: res.Reward, Turns: res.Turns, Process: res.Process}
	for _, s := range c.Schemes {
		sum := 0.0
		for _, v := range res.Calls {
			switch s {
			case Uniform:
				sum += v.Uniform
			case Provision:
				sum += v.Provision
			case Risk:
				sum += v.Risk
			case Privilege:
				sum += v.Privilege
			}
		}
		n.Components["reward/drift_penalty/"+string(s)] = -c.Lambda * sum
	}
	return n, nil
}
