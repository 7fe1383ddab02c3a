import { defineConfig } from "drizzle-kit";

// The PostgreSQL engine's migrations, generated apart from SQLite's (drizzle.config.ts).
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/postgres/schema.ts",
  out: "./drizzle/postgres",
});
