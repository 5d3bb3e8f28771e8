/** A column of a data source (an imported CSV table), as the API and source_query's description show it. */
export type ColumnType = 'integer' | 'bigint' | 'numeric' | 'boolean' | 'date' | 'timestamp' | 'timestamptz' | 'text';

export interface CsvColumn {
  name: string;
  type: ColumnType;
}
