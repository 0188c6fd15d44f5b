package suite_test

// Places named by the data_research scenarios that the shared settings
// table lacks, with the catalogue jurisdiction that governs them.
func init() {
	for k, v := range map[string]string{
		"Edinburgh": "UK", "Manchester": "UK", "Chicago": "US", "Illinois": "US", "Valencia": "EU",
		"Hangzhou": "CN", "Austin": "US", "Texas": "US", "Helsinki": "EU", "Oakland": "US", "California": "US",
	} {
		settings[k] = v
	}
}
