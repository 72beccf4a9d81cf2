package store

// WithoutSaveProcedure has db's saves send the compound statement for one
// message too, as a database without the procedure does.
func (db *DB) WithoutSaveProcedure() { db.saveProc.Store(nil) }
