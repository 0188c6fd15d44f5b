package suite_test

// Places of the commerce scenarios that the shared settings table lacks.
func init() {
	for k, v := range map[string]string{"Bristol": "UK", "Lisbon": "EU", "Copenhagen": "EU", "Hamburg": "EU", "Amsterdam": "EU", "Seattle": "US"} {
		settings[k] = v
	}
}
